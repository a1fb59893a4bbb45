package bundle

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/testreq"
)

// What hosts print for LibcCommand, as captured on each system: getconf
// where it knows GNU_LIBC_VERSION, else the first line of `ldd --version`
// (musl's ldd prints its banner on stderr, which LibcCommand keeps).
func TestParseLibc(t *testing.T) {
	for _, c := range []struct {
		system, out string
		want        Libc
	}{
		{"Debian 12 getconf", "glibc 2.36\n", Libc{"glibc", "2.36"}},
		{"RHEL 7 getconf", "glibc 2.17\n", Libc{"glibc", "2.17"}},
		{"Debian 12 ldd", "ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\n", Libc{"glibc", "2.36"}},
		{"Debian 11 ldd", "ldd (Debian GLIBC 2.31-13+deb11u11) 2.31\n", Libc{"glibc", "2.31"}},
		{"Debian 7 ldd", "ldd (Debian EGLIBC 2.13-38+deb7u12) 2.13\n", Libc{"glibc", "2.13"}},
		{"CentOS 7 ldd", "ldd (GNU libc) 2.17\n", Libc{"glibc", "2.17"}},
		{"CentOS 8 ldd", "ldd (GNU libc) 2.28\n", Libc{"glibc", "2.28"}},
		{"Ubuntu 16.04 ldd", "ldd (Ubuntu GLIBC 2.23-0ubuntu10) 2.23\n", Libc{"glibc", "2.23"}},
		{"Ubuntu 20.04 ldd", "ldd (Ubuntu GLIBC 2.31-0ubuntu9.16) 2.31\n", Libc{"glibc", "2.31"}},
		{"Ubuntu 22.04 ldd", "ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\n", Libc{"glibc", "2.35"}},
		{"Gentoo ldd", "ldd (Gentoo 2.37-r7 (patchset 10)) 2.37\n", Libc{"glibc", "2.37"}},
		{"Alpine ldd, first line", "musl libc (x86_64)\n", Libc{Name: "musl"}},
		{"Alpine ldd, whole banner", "musl libc (x86_64)\nVersion 1.2.4\nDynamic Program Loader\nUsage: /lib/ld-musl-x86_64.so.1 [options] [--] pathname [args]\n", Libc{Name: "musl"}},
		{"Alpine aarch64 ldd", "musl libc (aarch64)\nVersion 1.1.15\n", Libc{Name: "musl"}},
		{"no getconf, no ldd", "sh: 1: ldd: not found\n", Libc{}},
		{"nothing", "", Libc{}},
		{"a version that is not one", "glibc 2.x\n", Libc{}},
		{"ldd without a version", "ldd (GNU libc)\n", Libc{}},
	} {
		if got := ParseLibc(c.out); got != c.want {
			t.Errorf("%s: ParseLibc(%q) = %+v, want %+v", c.system, c.out, got, c.want)
		}
	}
}

// LibcCommand, run by this machine's sh, prints what ParseLibc reads.
func TestLibcCommandHere(t *testing.T) {
	if runtime.GOOS != "linux" {
		testreq.Missing(t, "the probe runs on Linux hosts only: this test reads this machine's glibc")
	}
	out, err := exec.Command("sh", "-c", LibcCommand).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", LibcCommand, err)
	}
	got := ParseLibc(string(out))
	if got.Name == "" || (got.Name == "glibc" && got.Version == "") {
		t.Errorf("ParseLibc(%q) = %+v: this machine's C library is not recognised", out, got)
	}
	t.Logf("this machine: %q -> %+v", out, got)
}

func TestCheckLibc(t *testing.T) {
	for _, c := range []struct {
		host Libc
		need string
		want string // a prefix of the error; "" for none
	}{
		{Libc{"glibc", "2.36"}, "2.34", ""},
		{Libc{"glibc", "2.34"}, "2.34", ""},
		{Libc{"glibc", "2.28"}, "2.28", ""},
		{Libc{"glibc", "2.28.1"}, "2.28", ""},
		{Libc{"glibc", "2.9"}, "2.10", "host has glibc 2.9; the probe needs glibc 2.10 or newer"}, // numeric, not string, order
		{Libc{"glibc", "2.17"}, "2.34", "host has glibc 2.17; this gpulab's probe was built here and needs glibc 2.34: build the portable probes with `make probes` (glibc >= 2.28) and rebuild gpulab"},
		{Libc{"glibc", "2.31"}, "2.34", "host has glibc 2.31; this gpulab's probe was built here and needs glibc 2.34: build the portable probes with `make probes`"},
		{Libc{"glibc", "2.17"}, "2.28", "host has glibc 2.17; the probe needs glibc 2.28 or newer"},
		{Libc{Name: "musl"}, "2.34", "host has musl libc, not glibc; this gpulab's probe needs glibc 2.34 or newer"},
		{Libc{Name: "musl"}, "", ""},      // a probe that needs no glibc
		{Libc{}, "2.34", ""},              // unknown host: the probe itself reports
		{Libc{Name: "glibc"}, "2.34", ""}, // glibc of unknown version
		{Libc{"glibc", "2.17"}, "", ""},   // static probe
	} {
		err := CheckLibc(c.host, c.need)
		if (c.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("CheckLibc(%+v, %q) = %v, want %q", c.host, c.need, err, c.want)
		}
	}
}

// NeedsGlibc reads the probes this gpulab embeds (make build's native
// ones or make probes' portable ones) as the dynamic loader does: the
// newest GLIBC_ version among the binary's version needs, the same as
// objdump's "Version References". The native probe needs no newer glibc
// than this machine's, a portable one none newer than PortableGlibc.
func TestNeedsGlibcOfEmbeddedProbes(t *testing.T) {
	entries, _ := files.ReadDir("bin")
	portable, _ := os.ReadFile("bin/.portable")
	var probes int
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".gz")
		if !ok {
			continue
		}
		probes++
		t.Run(name, func(t *testing.T) {
			kind, arch, _ := strings.Cut(name, "-linux-")
			data, _, err := Probe(arch, kind == "nvmlsim")
			if err != nil {
				t.Fatal(err)
			}
			need, err := NeedsGlibc(data)
			if err != nil || !versionRE.MatchString(need) {
				t.Fatalf("NeedsGlibc(%s) = %q, %v: a cgo probe needs some glibc", name, need, err)
			}
			isPortable := strings.Contains(string(portable), e.Name())
			t.Logf("%s (portable %v) needs glibc %s", name, isPortable, need)
			switch {
			case isPortable && compareVersions(need, PortableGlibc) > 0:
				t.Errorf("portable %s needs glibc %s, above %s", name, need, PortableGlibc)
			case !isPortable && arch == runtime.GOARCH:
				out, _ := exec.Command("sh", "-c", LibcCommand).Output()
				if here := ParseLibc(string(out)); here.Name == "glibc" && CheckLibc(here, need) != nil {
					t.Errorf("native %s needs glibc %s, above this machine's %s", name, need, here.Version)
				}
			}
			if want := objdumpNeed(t, data); need != want {
				t.Errorf("NeedsGlibc(%s) = %q, objdump -p says %q", name, need, want)
			}
		})
	}
	if probes == 0 {
		testreq.Missing(t, "no probe is embedded in probes/bundle/bin: run `make build` (or `make probes`)")
	}
}

// NeedsGlibc agrees with objdump on a binary of this machine that is not
// Go's, and refuses what is not ELF.
func TestNeedsGlibcOfOtherBinaries(t *testing.T) {
	if _, err := NeedsGlibc([]byte("#!/bin/sh\necho not a probe\n")); err == nil {
		t.Error("NeedsGlibc(a shell script) = nil error, want one")
	}
	sh := testreq.Tool(t, "sh", "its ELF stands for a binary that is not Go's")
	data, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	need, err := NeedsGlibc(data)
	if err != nil {
		t.Fatalf("NeedsGlibc(%s): %v", sh, err)
	}
	if want := objdumpNeed(t, data); need != want {
		t.Errorf("NeedsGlibc(%s) = %q, objdump -p says %q", sh, need, want)
	}
}

var versionRefRE = regexp.MustCompile(`(?m)^\s+0x[0-9a-f]+ 0x[0-9a-f]+ [0-9]+ GLIBC_([0-9.]+)$`)

// objdumpNeed is the newest GLIBC_ version in objdump's "Version
// References" of data.
func objdumpNeed(t *testing.T, data []byte) string {
	t.Helper()
	objdump := testreq.Tool(t, "objdump", "it checks NeedsGlibc (apt-get install binutils)")
	f, err := os.CreateTemp(t.TempDir(), "elf")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(objdump, "-p", f.Name()).Output()
	if err != nil {
		t.Fatalf("objdump -p: %v", err)
	}
	newest := ""
	for _, m := range versionRefRE.FindAllStringSubmatch(string(out), -1) {
		if newest == "" || compareVersions(m[1], newest) > 0 {
			newest = m[1]
		}
	}
	return newest
}
