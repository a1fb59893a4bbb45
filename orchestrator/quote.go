package orchestrator

import "strings"

// Quote returns s quoted for a POSIX shell, so that the remote shell sees
// exactly one word with exactly these bytes, whatever they are.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !safeShellRune(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuoteArgs quotes each argument and joins them with spaces: a command line
// whose words are exactly args.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

func safeShellRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)
}
