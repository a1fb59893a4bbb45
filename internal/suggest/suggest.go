// Package suggest finds the name a user probably meant: "did you mean".
package suggest

import (
	"strconv"
	"strings"
)

// Closest returns the candidate nearest to name, when one is near enough
// to be a likely typo: at most a quarter of name's letters apart (at
// least 2), or one name the other's start ("nvidia-smi-topo-m" for
// "nvidia-smi-topo"). Of candidates equally near, one that goes on from
// what was typed ("nvidia-smi-nvlink-status" for "nvidia-smi-nvlink")
// comes before one that stops short of it ("nvidia-smi"); past that, ties
// go to the first candidate. It returns "" when none is near, or when
// name is one of them.
func Closest(name string, candidates []string) string {
	if all := nearest(name, candidates); len(all) > 0 {
		return all[0]
	}
	return ""
}

// nearest is every candidate as near as the nearest, in their order.
func nearest(name string, candidates []string) []string {
	var best []string
	bestScore := -1
	limit := max(2, len(name)/4)
	for _, c := range candidates {
		if c == name {
			return nil
		}
		lc, ln := strings.ToLower(c), strings.ToLower(name)
		d := distance(ln, lc)
		goesOn := len(name) >= 3 && strings.HasPrefix(lc, ln)
		if d > limit && !goesOn && !(len(name) >= 3 && strings.HasPrefix(ln, lc)) {
			continue
		}
		score := 2 * d
		if !goesOn {
			score++
		}
		switch {
		case bestScore < 0 || score < bestScore:
			best, bestScore = []string{c}, score
		case score == bestScore:
			best = append(best, c)
		}
	}
	return best
}

// Hint is Closest as a message's tail: `: did you mean "x"?`, or "";
// candidates equally near are all named (`"a" or "b"`), up to three.
func Hint(name string, candidates []string) string {
	all := nearest(name, candidates)
	if len(all) == 0 {
		return ""
	}
	all = all[:min(len(all), 3)]
	quoted := make([]string, len(all))
	for i, c := range all {
		quoted[i] = strconv.Quote(c)
	}
	return ": did you mean " + strings.Join(quoted, " or ") + "?"
}

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
