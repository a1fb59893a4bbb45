package bundle

import (
	"bytes"
	"debug/elf"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PortableGlibc is the newest glibc that `make probes` lets a probe need
// (probes/build.sh's gate): its probes run on RHEL 8, Ubuntu 20.04 and
// newer. A probe built natively by `make build` needs the glibc of the
// machine that built it.
const PortableGlibc = "2.28"

// NeedsGlibc returns the newest glibc version ("2.34") that the ELF
// binary data needs: the highest GLIBC_x.y among the symbol versions its
// dynamic section requires, which is what the dynamic loader checks before
// the program starts. It returns "" for a binary that needs no glibc
// version (static, or linked without symbol versions), and an error when
// data is not ELF.
func NeedsGlibc(data []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("read the probe's ELF header: %w", err)
	}
	defer f.Close()
	if f.SectionByType(elf.SHT_DYNSYM) == nil || f.SectionByType(elf.SHT_GNU_VERNEED) == nil {
		return "", nil
	}
	needs, err := f.DynamicVersionNeeds()
	if err != nil {
		return "", fmt.Errorf("read the probe's symbol versions: %w", err)
	}
	newest := ""
	for _, lib := range needs {
		for _, n := range lib.Needs {
			v, ok := glibcVersion(n.Dep)
			if ok && (newest == "" || compareVersions(v, newest) > 0) {
				newest = v
			}
		}
	}
	return newest, nil
}

var versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+){1,2}$`)

// glibcVersion reads a symbol version name such as GLIBC_2.34.
func glibcVersion(name string) (string, bool) {
	switch {
	case name == "GLIBC_ABI_DT_RELR": // packed relative relocations, since glibc 2.36
		return "2.36", true
	case strings.HasPrefix(name, "GLIBC_") && versionRE.MatchString(name[len("GLIBC_"):]):
		return name[len("GLIBC_"):], true
	}
	return "", false
}

// compareVersions compares dotted decimal versions ("2.17" < "2.28" <
// "2.28.1"); both must match versionRE.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// Libc is a host's C library as ParseLibc reads it. The zero value is a
// host whose C library could not be read.
type Libc struct {
	Name    string // "glibc" or "musl"; "" when unknown
	Version string // "2.36" for glibc; "" when unknown
}

// LibcCommand prints the host's C library on one line: glibc's getconf
// answers "glibc 2.36"; where getconf lacks the variable (musl), ldd's
// first line names the library.
const LibcCommand = `getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -n1`

// lddRE matches glibc's `ldd --version` first line, "ldd (PKGVERSION)
// VERSION", where distributions set PKGVERSION: "ldd (GNU libc) 2.17",
// "ldd (Debian GLIBC 2.36-9+deb12u4) 2.36", "ldd (Gentoo 2.37-r7 (patchset
// 10)) 2.37". musl's ldd says "musl libc" instead.
var lddRE = regexp.MustCompile(`^ldd \(.*\) ([0-9]+(?:\.[0-9]+){1,2})$`)

// ParseLibc reads what LibcCommand printed on a host. Output it does not
// recognise gives the zero Libc.
func ParseLibc(out string) Libc {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimSpace(line)
	if strings.HasPrefix(strings.ToLower(line), "musl libc") {
		return Libc{Name: "musl"}
	}
	if v, ok := strings.CutPrefix(line, "glibc "); ok && versionRE.MatchString(v) {
		return Libc{Name: "glibc", Version: v}
	}
	if m := lddRE.FindStringSubmatch(line); m != nil {
		return Libc{Name: "glibc", Version: m[1]}
	}
	return Libc{}
}

// CheckLibc returns nil when a probe that needs glibc need ("" for none)
// can start on a host with the C library host, and otherwise an error that
// says why not and what to do. A host whose C library is unknown is not
// refused: the probe, or the host's loader, says what is wrong there.
func CheckLibc(host Libc, need string) error {
	switch {
	case need == "" || host.Name == "":
		return nil
	case host.Name == "musl":
		return fmt.Errorf("host has musl libc, not glibc; this gpulab's probe needs glibc %s or newer", need)
	case host.Version == "" || compareVersions(host.Version, need) >= 0:
		return nil
	case compareVersions(need, PortableGlibc) > 0:
		return fmt.Errorf("host has glibc %s; this gpulab's probe was built here and needs glibc %s: build the portable probes with `make probes` (glibc >= %s) and rebuild gpulab",
			host.Version, need, PortableGlibc)
	}
	return fmt.Errorf("host has glibc %s; the probe needs glibc %s or newer", host.Version, need)
}
