// Package suggest finds the name a user probably meant: "did you mean".
package suggest

import "strings"

// Closest returns the candidate nearest to name, when one is near enough
// to be a likely typo: at most a quarter of name's letters apart (at
// least 2), or one name the other's start ("nvidia-smi-topo-m" for
// "nvidia-smi-topo"). Ties go to the first candidate. It returns "" when
// none is near, or when name is one of them.
func Closest(name string, candidates []string) string {
	best, bestD := "", -1
	limit := max(2, len(name)/4)
	for _, c := range candidates {
		if c == name {
			return ""
		}
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d > limit && !(len(name) >= 3 && (strings.HasPrefix(c, name) || strings.HasPrefix(name, c))) {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Hint is Closest as a message's tail: `: did you mean "x"?`, or "".
func Hint(name string, candidates []string) string {
	if c := Closest(name, candidates); c != "" {
		return ": did you mean \"" + c + "\"?"
	}
	return ""
}

// distance is the Levenshtein distance between a and b, in bytes (names
// here are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
