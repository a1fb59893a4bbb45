package inventory

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Host names and user names reach a shell: OpenSSH expands %h and %r in an
// ssh_config's ProxyCommand, LocalCommand and the like, and hands them to
// /bin/sh unquoted. An inventory may come from someone else, so its host
// names and user names are held to what a host and a user can be called,
// as OpenSSH holds the ones it is given on its command line.

// hostNameByte reports whether c may appear in a host name or address:
// letters, digits, '.', '-', '_', ':' and '%' (IPv6 addresses and their
// zone), '[' and ']' (an IPv6 literal).
func hostNameByte(c rune) bool {
	return c < unicode.MaxASCII && validNameByte(byte(c)) || c == '[' || c == ']'
}

// userNameByte reports whether c may appear in a user name: letters,
// digits, '.', '_', '-', '@' and '+'.
func userNameByte(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '@' || c == '+'
}

// opensshRefusesHost reports whether OpenSSH refuses s as a host name
// (valid_hostname in its misc.c): a leading '-', whitespace, control
// characters or one of '`"$\;&<>|(){},.
func opensshRefusesHost(s string) bool {
	return strings.HasPrefix(s, "-") || strings.IndexFunc(s, func(c rune) bool {
		return strings.ContainsRune("'`\"$\\;&<>|(){},", c) || unicode.IsSpace(c) || unicode.IsControl(c)
	}) >= 0
}

// opensshRefusesUser reports whether OpenSSH refuses s as a user name
// (valid_ruser in its misc.c): a leading '-', control characters, one of
// '`";&<>|(){}, whitespace before '-', a '\' at the end.
func opensshRefusesUser(s string) bool {
	if strings.HasPrefix(s, "-") || strings.HasSuffix(s, "\\") {
		return true
	}
	for i, c := range s {
		if unicode.IsControl(c) || strings.ContainsRune("'`\";&<>|(){}", c) ||
			unicode.IsSpace(c) && strings.HasPrefix(s[i+len(string(c)):], "-") {
			return true
		}
	}
	return false
}

// nameProblem says what is wrong with value as a kind of name ("a host
// name", "a user name"), or "" when nothing is: it is empty, starts with
// '-', or holds characters outside ok (listed, quoted, in order of
// appearance); refused adds that OpenSSH refuses it too.
func nameProblem(value, kind string, ok func(rune) bool, refused bool) string {
	if value == "" {
		return "is empty"
	}
	var bad []string
	seen := map[rune]bool{}
	for _, c := range value {
		if !ok(c) && !seen[c] {
			seen[c] = true
			bad = append(bad, strconv.QuoteRune(c))
		}
	}
	var problem string
	switch dash := value[0] == '-'; {
	case dash && len(bad) > 0:
		problem = fmt.Sprintf("starts with '-' and holds characters %s cannot (%s)", kind, strings.Join(bad, ", "))
	case dash:
		problem = fmt.Sprintf("starts with '-', which %s cannot", kind)
	case len(bad) > 0:
		problem = fmt.Sprintf("holds characters %s cannot (%s)", kind, strings.Join(bad, ", "))
	default:
		return ""
	}
	if refused {
		problem += ": OpenSSH refuses it too"
	}
	return problem
}

// checkHostName returns an error, "address "x$(id)" holds characters a
// host name cannot ('$', '(', ')'): OpenSSH refuses it too", when value
// is not a host name; what names the value ("address", "host").
func checkHostName(what, value string) error {
	if p := nameProblem(value, "a host name", hostNameByte, opensshRefusesHost(value)); p != "" {
		return fmt.Errorf("%s %q %s", what, value, p)
	}
	return nil
}

// checkUserName is checkHostName for user names.
func checkUserName(what, value string) error {
	if p := nameProblem(value, "a user name", userNameByte, opensshRefusesUser(value)); p != "" {
		return fmt.Errorf("%s %q %s", what, value, p)
	}
	return nil
}

// checkAddress checks a host's address as written, where {name} stands for
// each name of the host's node set, names that hold a host name's
// characters only and do not start with '-' (see ExpandPattern): the
// address is a host name once each {name} is one.
func checkAddress(address string) error {
	v := strings.ReplaceAll(address, "{name}", "x")
	if p := nameProblem(v, "a host name", hostNameByte, opensshRefusesHost(v)); p != "" {
		return fmt.Errorf("address %q %s", address, p)
	}
	return nil
}

// checkJump accepts ProxyJump syntax: [user@]host[:port], comma-separated
// for a chain, each user a user name and each host a host name (an IPv6
// address in brackets when it has a port: [fe80::1%eth0]:22); or "none".
func checkJump(j string) error {
	if strings.TrimSpace(j) == "none" {
		return nil
	}
	for _, hop := range strings.Split(j, ",") {
		if err := checkHop(strings.TrimSpace(hop)); err != nil {
			return fmt.Errorf("jump %q: want [user@]host[:port], comma-separated for a chain: %w", j, err)
		}
	}
	return nil
}

func checkHop(hop string) error {
	if hop == "" {
		return fmt.Errorf("a hop is empty")
	}
	host := hop
	if i := strings.LastIndexByte(hop, '@'); i >= 0 {
		if err := checkUserName("user", hop[:i]); err != nil {
			return err
		}
		host = hop[i+1:]
	}
	port := ""
	switch {
	case strings.HasPrefix(host, "["):
		if end := strings.IndexByte(host, ']'); end > 0 && strings.HasPrefix(host[end+1:], ":") {
			host, port = host[:end+1], host[end+2:]
		}
	case strings.Count(host, ":") == 1:
		host, port, _ = strings.Cut(host, ":")
	}
	if err := checkHostName("host", host); err != nil {
		return err
	}
	if port != "" || strings.HasSuffix(hop, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '+' {
			return fmt.Errorf("port %q: want 1-65535", port)
		}
	}
	return nil
}
