package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func toolTrue(*toolCall, []string) int  { return 0 }
func toolFalse(*toolCall, []string) int { return 1 }

func toolCat(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err == nil {
		err = o.check("cat", "")
	}
	if err != nil {
		t.errf("cat: %v", err)
		return 1
	}
	return t.eachInput("cat", o.args, func(_ string, r io.Reader) error {
		_, err := io.Copy(t.stdout, r)
		return err
	})
}

var errMemory = errors.New("memory exhausted (a simulated host holds 16 MiB of input at most)")

// readAll reads r whole, up to maxInput.
func readAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err == nil && int64(len(data)) > maxInput {
		return data[:maxInput], errMemory
	}
	return data, err
}

// lines reads r into lines without their newlines, up to maxInput.
func lines(r io.Reader) ([]string, error) {
	var out []string
	lr := &io.LimitedReader{R: r, N: maxInput + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if lr.N <= 0 {
		return out, errMemory
	}
	return out, sc.Err()
}

func toolHead(t *toolCall, args []string) int {
	o, err := parseOpts(numericFlag(args[1:]), "n,c", "lines,bytes", false)
	if err == nil {
		err = o.check("head", "nc", "lines", "bytes")
	}
	if err != nil {
		t.errf("head: %v", err)
		return 1
	}
	n, byBytes := 10, false
	if v, ok := o.get("n", "lines"); ok {
		if n, err = strconv.Atoi(v); err != nil {
			t.errf("head: invalid number of lines: '%s'", v)
			return 1
		}
	}
	if v, ok := o.get("c", "bytes"); ok {
		if n, err = strconv.Atoi(v); err != nil {
			t.errf("head: invalid number of bytes: '%s'", v)
			return 1
		}
		byBytes = true
	}
	return t.eachInput("head", o.args, func(_ string, r io.Reader) error {
		if byBytes {
			_, err := io.Copy(t.stdout, io.LimitReader(r, int64(max(n, 0))))
			return err
		}
		br := bufio.NewReader(r)
		for i := 0; i < n; i++ {
			line, err := br.ReadString('\n')
			io.WriteString(t.stdout, line)
			if err != nil {
				break
			}
		}
		return nil
	})
}

func toolTail(t *toolCall, args []string) int {
	o, err := parseOpts(numericFlag(args[1:]), "n,c", "lines,bytes", false)
	if err == nil {
		err = o.check("tail", "nc", "lines", "bytes")
	}
	if err != nil {
		t.errf("tail: %v", err)
		return 1
	}
	v, ok := o.get("n", "lines")
	if !ok {
		v = "10"
	}
	from := strings.HasPrefix(v, "+")
	n, err := strconv.Atoi(strings.TrimPrefix(v, "+"))
	if err != nil || n < 0 {
		t.errf("tail: invalid number of lines: '%s'", v)
		return 1
	}
	return t.eachInput("tail", o.args, func(_ string, r io.Reader) error {
		ls, err := lines(r)
		switch {
		case from:
			ls = ls[min(max(n-1, 0), len(ls)):]
		default:
			ls = ls[max(len(ls)-n, 0):]
		}
		for _, l := range ls {
			fmt.Fprintln(t.stdout, l)
		}
		return err
	})
}

func toolWc(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err == nil {
		err = o.check("wc", "lwcm", "lines", "words", "bytes", "chars")
	}
	if err != nil {
		t.errf("wc: %v", err)
		return 1
	}
	show := []bool{o.has("l", "lines"), o.has("w", "words"), o.has("c", "bytes", "m", "chars")}
	if !slices.Contains(show, true) {
		show = []bool{true, true, true}
	}
	var rows [][]int64
	var names []string
	code := t.eachInput("wc", o.args, func(name string, r io.Reader) error {
		l, w, c, err := count(r)
		rows = append(rows, []int64{l, w, c})
		names = append(names, name)
		return err
	})
	if len(rows) > 1 {
		total := []int64{0, 0, 0}
		for _, r := range rows {
			for i := range total {
				total[i] += r[i]
			}
		}
		rows, names = append(rows, total), append(names, "total")
	}
	shown := 0
	for _, s := range show {
		if s {
			shown++
		}
	}
	width := 7
	if shown == 1 && len(o.args) == 0 {
		width = 0 // GNU wc prints a lone count of standard input unpadded
	} else if len(o.args) > 0 {
		width = len(strconv.FormatInt(rows[len(rows)-1][2], 10))
	}
	for i, r := range rows {
		var f []string
		for k, s := range show {
			if s {
				f = append(f, fmt.Sprintf("%*d", width, r[k]))
			}
		}
		line := strings.Join(f, " ")
		if len(o.args) > 0 {
			line += " " + names[i]
		}
		t.outf("%s\n", line)
	}
	return code
}

// count streams r, counting lines, words and bytes as wc does.
func count(r io.Reader) (lines, words, n int64, err error) {
	buf := make([]byte, 64<<10)
	inWord := false
	for {
		k, rerr := r.Read(buf)
		for _, c := range buf[:k] {
			if c == '\n' {
				lines++
			}
			space := c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
			if !space && !inWord {
				words++
			}
			inWord = !space
		}
		n += int64(k)
		if rerr == io.EOF {
			return lines, words, n, nil
		}
		if rerr != nil {
			return lines, words, n, rerr
		}
	}
}

// bre turns a POSIX basic regular expression into Go's syntax: \( \) \|
// \{ \} \+ \? are the operators, the bare characters are literals.
func bre(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			switch n := p[i]; n {
			case '(', ')', '|', '{', '}', '+', '?':
				b.WriteByte(n)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case strings.IndexByte("(){}|+?", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func toolGrep(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "e,m,A,B,C", "regexp,max-count,after-context,before-context,context", false)
	if err == nil {
		err = o.check("grep", "EFGPivwxcqlnohHsemABC", "regexp", "max-count", "after-context", "before-context", "context",
			"fixed-strings", "extended-regexp", "basic-regexp", "ignore-case", "invert-match", "word-regexp", "line-regexp",
			"count", "quiet", "silent", "files-with-matches", "line-number", "only-matching", "with-filename", "no-filename", "no-messages")
	}
	if err != nil {
		t.errf("grep: %v", err)
		return 2
	}
	var pats []string
	if v, ok := o.get("e", "regexp"); ok {
		pats = append(pats, v)
	} else if len(o.args) > 0 {
		pats, o.args = append(pats, o.args[0]), o.args[1:]
	} else {
		t.errf("Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.")
		return 2
	}
	re, err := grepRegexp(args[0], o, strings.Split(strings.Join(pats, "\n"), "\n"))
	if err != nil {
		t.errf("grep: %v", err)
		return 2
	}
	g := grepRun{t: t, re: re, o: o, withName: (len(o.args) > 1 || o.has("H", "with-filename")) && !o.has("h", "no-filename"), max: -1}
	if v, ok := o.get("m", "max-count"); ok {
		g.max, _ = strconv.Atoi(v)
	}
	for _, c := range []struct {
		n    []string
		dest []*int
	}{{[]string{"C", "context"}, []*int{&g.before, &g.after}}, {[]string{"A", "after-context"}, []*int{&g.after}}, {[]string{"B", "before-context"}, []*int{&g.before}}} {
		if v, ok := o.get(c.n...); ok {
			k, err := strconv.Atoi(v)
			if err != nil || k < 0 {
				t.errf("grep: %s: invalid context length argument", v)
				return 2
			}
			for _, d := range c.dest {
				*d = k
			}
		}
	}
	code := t.eachInput("grep", o.args, g.file)
	switch {
	case code != 0 && !o.has("s"):
		return 2
	case g.matched:
		return 0
	}
	return 1
}

func grepRegexp(name string, o opts, pats []string) (*regexp.Regexp, error) {
	for i, p := range pats {
		switch {
		case o.has("F", "fixed-strings") || name == "fgrep":
			p = regexp.QuoteMeta(p)
		case !o.has("E", "extended-regexp", "P") && name != "egrep":
			p = bre(p)
		}
		if o.has("w", "word-regexp") {
			p = `\b(?:` + p + `)\b`
		}
		if o.has("x", "line-regexp") {
			p = `^(?:` + p + `)$`
		}
		pats[i] = `(?:` + p + `)`
	}
	expr := strings.Join(pats, "|")
	if o.has("i", "ignore-case") {
		expr = "(?i)" + expr
	}
	return regexp.Compile(expr)
}

type grepRun struct {
	t             *toolCall
	re            *regexp.Regexp
	o             opts
	withName      bool
	matched       bool
	max           int
	before, after int // -B, -A lines of context
}

func (g *grepRun) file(name string, r io.Reader) error {
	if name == "-" {
		name = "(standard input)"
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	count, n, afterLeft, last := 0, 0, 0, 0
	invert := g.o.has("v", "invert-match")
	var before []numbered // lines kept for -B
	listing := !g.o.has("q", "quiet", "silent", "l", "files-with-matches", "c", "count")
	done := false // -m reached: only the trailing context is left to print
	for sc.Scan() {
		n++
		line := sc.Text()
		if done {
			if afterLeft == 0 || !listing {
				break
			}
			g.printContext(name, n, line, &last)
			afterLeft--
			continue
		}
		if g.re.MatchString(line) == invert {
			if afterLeft > 0 && listing {
				g.printContext(name, n, line, &last)
				afterLeft--
			} else if g.before > 0 {
				before = append(before, numbered{n, line})
				if len(before) > g.before {
					before = before[1:]
				}
			}
			continue
		}
		count++
		g.matched = true
		switch {
		case g.o.has("q", "quiet", "silent"):
			return errStop
		case g.o.has("l", "files-with-matches"):
			g.t.outf("%s\n", name)
			return nil
		case g.o.has("c", "count"):
		default:
			for _, b := range before {
				g.printContext(name, b.n, b.line, &last)
			}
			before = before[:0]
			g.separate(n, &last)
			g.printLine(name, n, line, invert)
			last, afterLeft = n, g.after
		}
		done = g.max >= 0 && count >= g.max
	}
	if g.o.has("c", "count") {
		if g.withName {
			g.t.outf("%s:", name)
		}
		g.t.outf("%d\n", count)
	}
	return sc.Err()
}

type numbered struct {
	n    int
	line string
}

// separate prints "--" between groups of context that do not touch, as
// GNU grep does when context was asked for.
func (g *grepRun) separate(n int, last *int) {
	if (g.before > 0 || g.after > 0) && *last > 0 && n > *last+1 {
		g.t.outf("--\n")
	}
}

// printContext prints a line of context: "-" where a match has ":".
func (g *grepRun) printContext(name string, n int, line string, last *int) {
	g.separate(n, last)
	prefix := ""
	if g.withName {
		prefix = name + "-"
	}
	if g.o.has("n", "line-number") {
		prefix += strconv.Itoa(n) + "-"
	}
	g.t.outf("%s%s\n", prefix, line)
	*last = n
}

func (g *grepRun) printLine(name string, n int, line string, invert bool) {
	prefix := ""
	if g.withName {
		prefix = name + ":"
	}
	if g.o.has("n", "line-number") {
		prefix += strconv.Itoa(n) + ":"
	}
	if g.o.has("o", "only-matching") && !invert {
		for _, m := range g.re.FindAllString(line, -1) {
			g.t.outf("%s%s\n", prefix, m)
		}
		return
	}
	g.t.outf("%s%s\n", prefix, line)
}

func toolSort(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "k,t", "key,field-separator", false)
	if err == nil {
		err = o.check("sort", "nrukthg", "numeric-sort", "reverse", "unique", "key", "field-separator")
	}
	if err != nil {
		t.errf("sort: %v", err)
		return 2
	}
	var all []string
	code := t.eachInput("sort", o.args, func(_ string, r io.Reader) error {
		ls, err := lines(r)
		all = append(all, ls...)
		return err
	})
	key := func(s string) string { return s }
	if k, ok := o.get("k", "key"); ok {
		f, _ := strconv.Atoi(strings.SplitN(strings.SplitN(k, ",", 2)[0], ".", 2)[0])
		sep, _ := o.get("t", "field-separator")
		key = func(s string) string {
			var fs []string
			if sep != "" {
				fs = strings.Split(s, sep)
			} else {
				fs = strings.Fields(s)
			}
			if f >= 1 && f <= len(fs) {
				return strings.Join(fs[f-1:], " ")
			}
			return ""
		}
	}
	numeric := o.has("n", "numeric-sort", "g", "h")
	cmp := func(a, b string) int {
		ka, kb := key(a), key(b)
		if numeric {
			na, nb := leadingNumber(ka), leadingNumber(kb)
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(ka, kb)
	}
	slices.SortStableFunc(all, cmp)
	if o.has("r", "reverse") {
		slices.Reverse(all)
	}
	if o.has("u", "unique") {
		all = slices.CompactFunc(all, func(a, b string) bool { return cmp(a, b) == 0 })
	}
	for _, l := range all {
		t.outf("%s\n", l)
	}
	return code
}

func leadingNumber(s string) float64 {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || (end == 0 && s[end] == '-')) {
		end++
	}
	f, _ := strconv.ParseFloat(s[:end], 64)
	return f
}

func toolUniq(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err == nil {
		err = o.check("uniq", "cdu")
	}
	if err != nil {
		t.errf("uniq: %v", err)
		return 1
	}
	return t.eachInput("uniq", o.args[:min(len(o.args), 1)], func(_ string, r io.Reader) error {
		ls, err := lines(r)
		for i := 0; i < len(ls); {
			j := i + 1
			for j < len(ls) && ls[j] == ls[i] {
				j++
			}
			n := j - i
			if (o.has("d") && n < 2) || (o.has("u") && n > 1) {
				i = j
				continue
			}
			if o.has("c") {
				t.outf("%7d %s\n", n, ls[i])
			} else {
				t.outf("%s\n", ls[i])
			}
			i = j
		}
		return err
	})
}

// fieldList reads cut's LIST (1,3-5,7-) into a predicate on 1-based indexes.
func fieldList(list string) (func(int) bool, error) {
	type span struct{ lo, hi int }
	var spans []span
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		s := span{1, 1 << 30}
		var err error
		if lo != "" {
			if s.lo, err = strconv.Atoi(lo); err != nil || s.lo < 1 {
				return nil, fmt.Errorf("invalid field value '%s'", part)
			}
		}
		switch {
		case !isRange:
			s.hi = s.lo
		case hi != "":
			if s.hi, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("invalid field range '%s'", part)
			}
		}
		spans = append(spans, s)
	}
	return func(i int) bool {
		for _, s := range spans {
			if i >= s.lo && i <= s.hi {
				return true
			}
		}
		return false
	}, nil
}

func toolCut(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "d,f,c,b", "delimiter,fields,characters,bytes", false)
	if err == nil {
		err = o.check("cut", "dfcb", "delimiter", "fields", "characters", "bytes")
	}
	if err != nil {
		t.errf("cut: %v", err)
		return 1
	}
	list, byFields := o.get("f", "fields")
	if !byFields {
		if list, _ = o.get("c", "characters", "b", "bytes"); list == "" {
			t.errf("cut: you must specify a list of bytes, characters, or fields")
			return 1
		}
	}
	in, err := fieldList(list)
	if err != nil {
		t.errf("cut: %v", err)
		return 1
	}
	delim, ok := o.get("d", "delimiter")
	if !ok {
		delim = "\t"
	}
	return t.eachInput("cut", o.args, func(_ string, r io.Reader) error {
		ls, err := lines(r)
		for _, l := range ls {
			if !byFields {
				var b []byte
				for i := 0; i < len(l); i++ {
					if in(i + 1) {
						b = append(b, l[i])
					}
				}
				t.outf("%s\n", b)
				continue
			}
			if !strings.Contains(l, delim) {
				t.outf("%s\n", l)
				continue
			}
			var keep []string
			for i, f := range strings.Split(l, delim) {
				if in(i + 1) {
					keep = append(keep, f)
				}
			}
			t.outf("%s\n", strings.Join(keep, delim))
		}
		return err
	})
}

// trSet expands tr's SET: ranges (a-z), classes ([:upper:]) and escapes.
func trSet(s string) []byte {
	classes := map[string]string{"[:upper:]": "A-Z", "[:lower:]": "a-z", "[:digit:]": "0-9", "[:alpha:]": "A-Za-z", "[:alnum:]": "A-Za-z0-9", "[:space:]": " \t\n\r\v\f", "[:blank:]": " \t"}
	for k, v := range classes {
		s = strings.ReplaceAll(s, k, v)
	}
	s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\\`, `\`).Replace(s)
	var out []byte
	for i := 0; i < len(s); i++ {
		if i+2 < len(s) && s[i+1] == '-' && s[i] <= s[i+2] {
			for c := int(s[i]); c <= int(s[i+2]); c++ {
				out = append(out, byte(c))
			}
			i += 2
			continue
		}
		out = append(out, s[i])
	}
	return out
}

func toolTr(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil || len(o.args) == 0 || (!o.has("d") && len(o.args) < 2) {
		t.errf("tr: missing operand\nTry 'tr --help' for more information.")
		return 1
	}
	from := trSet(o.args[0])
	var to []byte
	if len(o.args) > 1 {
		to = trSet(o.args[1])
	}
	var m [256]int
	for i := range m {
		m[i] = i
	}
	for i, c := range from {
		switch {
		case o.has("d"):
			m[c] = -1
		case len(to) > 0:
			m[c] = int(to[min(i, len(to)-1)])
		}
	}
	data, err := readAll(t.stdin)
	out := make([]byte, 0, len(data))
	for _, c := range data {
		v := m[c]
		if v < 0 {
			continue
		}
		if o.has("s") && len(out) > 0 && out[len(out)-1] == byte(v) && bytes.IndexByte(to, byte(v)) >= 0 {
			continue
		}
		out = append(out, byte(v))
	}
	t.stdout.Write(out)
	if err != nil {
		return 1
	}
	return 0
}

func toolSeq(t *toolCall, args []string) int {
	nums := make([]float64, 0, 3)
	for _, a := range args[1:] {
		f, err := strconv.ParseFloat(a, 64)
		if err != nil {
			t.errf("seq: invalid floating point argument: '%s'\nTry 'seq --help' for more information.", a)
			return 1
		}
		nums = append(nums, f)
	}
	first, step, last := 1.0, 1.0, 0.0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
	default:
		t.errf("seq: missing operand\nTry 'seq --help' for more information.")
		return 1
	}
	if step == 0 {
		t.errf("seq: invalid Zero increment value: '0'")
		return 1
	}
	w := bufio.NewWriterSize(t.stdout, 32<<10)
	for v, n := first, 0; (step > 0 && v <= last) || (step < 0 && v >= last); v, n = v+step, n+1 {
		if n%1024 == 0 && t.ctx.Err() != nil {
			return 130
		}
		w.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		if err := w.WriteByte('\n'); err != nil {
			t.werr = err
			return 1
		}
	}
	if err := w.Flush(); err != nil {
		t.werr = err
		return 1
	}
	return 0
}

func toolTee(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil {
		t.errf("tee: %v", err)
		return 1
	}
	flag := os.O_TRUNC
	if o.has("a", "append") {
		flag = os.O_APPEND
	}
	ws := []io.Writer{t.stdout}
	code := 0
	for _, n := range o.args {
		w, err := t.openWrite(n, flag)
		if err != nil {
			t.errf("tee: %s: %s", n, errText(err))
			code = 1
			continue
		}
		defer w.Close()
		ws = append(ws, w)
	}
	if _, err := io.Copy(io.MultiWriter(ws...), t.stdin); err != nil {
		return 1
	}
	return code
}
