package sim

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/sim/dgx"
)

// duration reads sleep's and timeout's NUMBER[smhd].
func duration(s string) (time.Duration, bool) { return dgx.SleepArg(s) }

func toolSleep(t *toolCall, args []string) int {
	if len(args) < 2 {
		t.errf("sleep: missing operand\nTry 'sleep --help' for more information.")
		return 1
	}
	var total time.Duration
	for _, a := range args[1:] {
		d, ok := duration(a)
		if !ok {
			t.errf("sleep: invalid time interval '%s'\nTry 'sleep --help' for more information.", a)
			return 1
		}
		total += d
	}
	timer := time.NewTimer(total)
	defer timer.Stop()
	select {
	case <-timer.C:
		return 0
	case <-t.ctx.Done():
		return 143
	}
}

func toolTimeout(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "s,k", "signal,kill-after", true)
	if err != nil || len(o.args) < 2 {
		t.errf("timeout: missing operand\nTry 'timeout --help' for more information.")
		return 125
	}
	d, ok := duration(o.args[0])
	if !ok {
		t.errf("timeout: invalid time interval '%s'", o.args[0])
		return 125
	}
	ctx, cancel := context.WithTimeout(t.ctx, d)
	defer cancel()
	if d == 0 {
		ctx, cancel = context.WithCancel(t.ctx)
		defer cancel()
	}
	sub := *t
	sub.ctx = ctx
	code := sub.sub(o.args[1:])
	if ctx.Err() == context.DeadlineExceeded && t.ctx.Err() == nil {
		return 124
	}
	return code
}

func toolEnv(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "u", "unset", true)
	if err != nil {
		t.errf("env: %v", err)
		return 125
	}
	env := t.env
	if o.has("i", "ignore-environment") {
		env = nil
	}
	if u, ok := o.get("u", "unset"); ok {
		var kept []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, u+"=") {
				kept = append(kept, kv)
			}
		}
		env = kept
	}
	rest := o.args
	for len(rest) > 0 && strings.Contains(rest[0], "=") {
		env = append(env, rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 {
		for _, kv := range env {
			t.outf("%s\n", kv)
		}
		return 0
	}
	sub := *t
	sub.env = env
	if code := sub.sub(rest); code != 127 {
		return code
	}
	return 127
}

func toolRunRest(t *toolCall, args []string) int {
	if len(args) < 2 {
		t.errf("%s: missing operand", args[0])
		return 125
	}
	return t.sub(args[1:])
}

func toolNice(t *toolCall, args []string) int {
	o, _ := parseOpts(args[1:], "n", "adjustment", true)
	if len(o.args) == 0 {
		t.outf("0\n")
		return 0
	}
	return t.sub(o.args)
}

func toolStdbuf(t *toolCall, args []string) int {
	o, _ := parseOpts(args[1:], "i,o,e", "input,output,error", true)
	return t.sub(o.args)
}

// toolSudo lets the simulated user run anything as root without a
// password (sudo -n works), as an operator's account on a GPU node has.
func toolSudo(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "u,g", "user,group", true)
	if err != nil {
		t.errf("sudo: %v", err)
		return 1
	}
	if o.has("v", "l", "k", "K") && len(o.args) == 0 {
		return 0
	}
	if len(o.args) == 0 {
		t.errf("usage: sudo -h | -K | -k | -V\nusage: sudo -v [-ABkNnS] [-g group] [-h host] [-p prompt] [-u user]")
		return 1
	}
	if u, ok := o.get("u", "user"); ok && u != "root" && u != "0" && u != User {
		t.errf("sudo: unknown user %s", u)
		return 1
	}
	sub := *t
	sub.root = true
	sub.env = append(append([]string(nil), t.env...), "SUDO_USER="+User, "USER=root", "LOGNAME=root", "HOME=/root")
	return sub.sub(o.args)
}

// toolKill: the simulation runs no processes a command could signal by
// number; gpulab's own stop goes through the session, not kill.
func toolKill(t *toolCall, args []string) int {
	o, _ := parseOpts(args[1:], "s,n", "signal", false)
	if o.has("l") {
		t.outf("HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM\n")
		return 0
	}
	if len(o.args) == 0 {
		t.errf("kill: usage: kill [-s sigspec | -n signum | -sigspec] pid | jobspec ... or kill -l [sigspec]")
		return 2
	}
	for _, p := range o.args {
		if _, err := strconv.Atoi(p); err != nil && !strings.HasPrefix(p, "%") {
			t.errf("sh: kill: %s: arguments must be process or job IDs", p)
			continue
		}
		t.errf("sh: kill: (%s) - No such process", p)
	}
	return 1
}

func toolID(t *toolCall, args []string) int {
	o, _ := parseOpts(args[1:], "", "", false)
	uid, name := "1000", User
	if t.root {
		uid, name = "0", "root"
	}
	switch {
	case o.has("u", "user") && o.has("n", "name"):
		t.outf("%s\n", name)
	case o.has("u", "user"):
		t.outf("%s\n", uid)
	case o.has("g", "group") && o.has("n", "name"):
		t.outf("%s\n", name)
	case o.has("g", "group"):
		t.outf("%s\n", uid)
	default:
		t.outf("uid=%s(%s) gid=%s(%s) groups=%s(%s),27(sudo),44(video)\n", uid, name, uid, name, uid, name)
	}
	return 0
}

func toolWhoami(t *toolCall, _ []string) int {
	if t.root {
		t.outf("root\n")
	} else {
		t.outf("%s\n", User)
	}
	return 0
}

// machineArch is `uname -m` of the simulated hosts: the operator's own
// architecture, since the probe pushed to them really runs here.
func machineArch() string {
	if runtime.GOARCH == "arm64" {
		return "aarch64"
	}
	return "x86_64"
}

// kernelRelease is a DGX OS 6 kernel.
const kernelRelease = "5.15.0-1042-nvidia"

func toolUname(t *toolCall, args []string) int {
	o, _ := parseOpts(args[1:], "", "", false)
	parts := map[string]string{"s": "Linux", "n": t.h.name, "r": kernelRelease, "v": "#42-Ubuntu SMP Tue Nov 14 17:12:32 UTC 2023", "m": machineArch(), "p": machineArch(), "i": machineArch(), "o": "GNU/Linux"}
	order := []string{"s", "n", "r", "v", "m", "p", "i", "o"}
	var out []string
	for _, k := range order {
		if o.has("a", "all") || o.has(k) {
			out = append(out, parts[k])
		}
	}
	if len(out) == 0 {
		out = []string{"Linux"}
	}
	t.outf("%s\n", strings.Join(out, " "))
	return 0
}

func toolHostname(t *toolCall, args []string) int {
	o, _ := parseOpts(args[1:], "", "", false)
	switch {
	case o.has("I", "i"):
		t.outf("%s\n", t.h.addr)
	case o.has("f", "fqdn", "long"):
		t.outf("%s.sim.gpulab\n", t.h.name)
	default:
		t.outf("%s\n", t.h.name)
	}
	return 0
}

// glibc is the C library of the simulated DGX OS 6 (Ubuntu 22.04), unless
// the probe needs a newer one (Fleet.probe).
const glibc = "2.35"

func toolGetconf(t *toolCall, args []string) int {
	if len(args) < 2 {
		t.errf("Usage: getconf [-v specification] variable_name [pathname]")
		return 1
	}
	_, libc := t.h.fleet.probe()
	v, ok := map[string]string{"GNU_LIBC_VERSION": "glibc " + libc, "_NPROCESSORS_ONLN": "256", "_NPROCESSORS_CONF": "256",
		"PAGESIZE": "4096", "PAGE_SIZE": "4096", "LONG_BIT": "64", "CLK_TCK": "100"}[args[1]]
	if !ok {
		t.errf("getconf: Unrecognized variable '%s'", args[1])
		return 1
	}
	t.outf("%s\n", v)
	return 0
}

func toolLdd(t *toolCall, args []string) int {
	if len(args) > 1 && args[1] == "--version" {
		_, g := t.h.fleet.probe()
		t.outf("ldd (Ubuntu GLIBC %s-0ubuntu3.4) %s\nCopyright (C) 2022 Free Software Foundation, Inc.\nThis is free software; see the source for copying conditions.  There is NO\nwarranty; not even for MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.\nWritten by Roland McGrath and Ulrich Drepper.\n", g, g)
		return 0
	}
	t.errf("ldd: missing file arguments\nTry `ldd --help' for more information.")
	return 1
}

func toolDate(t *toolCall, args []string) int {
	now := time.Now().UTC()
	format := "+%a %b %e %H:%M:%S %Z %Y"
	for _, a := range args[1:] {
		switch {
		case strings.HasPrefix(a, "+"):
			format = a
		case a == "-u", a == "--utc":
		case a == "-Is", a == "--iso-8601=seconds":
			format = "+%Y-%m-%dT%H:%M:%S+00:00"
		case a == "-R":
			format = "+%a, %d %b %Y %H:%M:%S +0000"
		default:
			t.errf("date: invalid date '%s'", a)
			return 1
		}
	}
	r := strings.NewReplacer("%Y", now.Format("2006"), "%m", now.Format("01"), "%d", now.Format("02"), "%e", fmt.Sprintf("%2d", now.Day()),
		"%H", now.Format("15"), "%M", now.Format("04"), "%S", now.Format("05"), "%s", strconv.FormatInt(now.Unix(), 10),
		"%N", fmt.Sprintf("%09d", now.Nanosecond()), "%F", now.Format("2006-01-02"), "%T", now.Format("15:04:05"),
		"%Z", "UTC", "%z", "+0000", "%a", now.Format("Mon"), "%b", now.Format("Jan"), "%%", "%")
	t.outf("%s\n", r.Replace(format[1:]))
	return 0
}

func toolNproc(t *toolCall, _ []string) int {
	t.outf("256\n")
	return 0
}

func toolUptime(t *toolCall, _ []string) int {
	t.outf(" %s up 12 days,  3:04,  1 user,  load average: 0.08, 0.03, 0.01\n", time.Now().UTC().Format("15:04:05"))
	return 0
}

func toolWhich(t *toolCall, args []string) int {
	code := 0
	for _, n := range args[1:] {
		if strings.HasPrefix(n, "-") {
			continue
		}
		if t.known(n) {
			t.outf("/usr/bin/%s\n", n)
		} else {
			code = 1
		}
	}
	return code
}

// toolSh runs a shell: -c SCRIPT [NAME [ARGS]], or a script read from
// standard input. gpulab's wrapper keeps its meaning here too.
func toolSh(t *toolCall, args []string) int {
	c := &call{h: t.h, env: t.env, stdin: t.stdin, stdout: t.stdout, stderr: t.stderr}
	c.env = append(c.env, "PWD="+t.dir)
	if cmd, ok := isWrapper(args); ok {
		code, _ := c.runWrapped(t.ctx, cmd, t.stdin)
		return code
	}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-c" && args[i] != "--" {
		i++ // -e, -x, -u, -s, -l...: accepted
	}
	var script string
	var params []string
	switch {
	case i < len(args) && args[i] == "-c":
		if i+1 >= len(args) {
			t.errf("%s: -c: option requires an argument", args[0])
			return 2
		}
		script = args[i+1]
		if i+3 < len(args) {
			params = args[i+3:]
		}
	case i < len(args) && args[i] != "--":
		r, err := t.openRead(args[i])
		if err != nil {
			t.errf("%s: %s: %s", args[0], args[i], errText(err))
			return 127
		}
		b := new(strings.Builder)
		_, _ = io.Copy(b, r)
		r.Close()
		script, params = b.String(), args[i+1:]
	default:
		b := new(strings.Builder)
		_, _ = io.Copy(b, t.stdin)
		script = b.String()
		c.stdin = devNull{}
	}
	code, _ := c.runLine(t.ctx, script, params...)
	return code
}
