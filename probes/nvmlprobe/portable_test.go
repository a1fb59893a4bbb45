package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/probes/report"
)

// TestPortableProbes checks what `make probes` built: glibc symbol versions
// no newer than 2.28, no BIND_NOW, the size targets, and that the probes
// run where they must: amd64 inside a Debian 11 chroot, arm64 under
// qemu-user.
func TestPortableProbes(t *testing.T) {
	dist := filepath.Join("..", "..", "dist")
	bins := []string{"nvmlprobe-linux-amd64", "nvmlprobe-linux-arm64", "nvmlsim-linux-amd64"}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(dist, b)); err != nil {
			testreq.Missing(t, "dist/"+b+" is missing: run `make probes` (needs debootstrap, gcc-aarch64-linux-gnu, binutils)")
		}
	}
	versionRE := regexp.MustCompile(`GLIBC_([0-9.]+)`)
	for _, b := range bins {
		path := filepath.Join(dist, b)
		out, err := exec.Command("objdump", "-T", path).Output()
		if err != nil {
			t.Fatalf("objdump %s: %v", b, err)
		}
		for _, m := range versionRE.FindAllStringSubmatch(string(out), -1) {
			if newer(m[1], "2.28") {
				t.Errorf("%s needs GLIBC_%s, newer than 2.28 (RHEL 8, Ubuntu 20.04 could not run it)", b, m[1])
			}
		}
		dyn, _ := exec.Command("readelf", "-d", path).Output()
		if strings.Contains(string(dyn), "BIND_NOW") || regexp.MustCompile(`FLAGS_1.*\bNOW\b`).Match(dyn) {
			t.Errorf("%s asks for BIND_NOW", b)
		}
		if strings.HasPrefix(b, "nvmlprobe-") {
			data, _ := os.ReadFile(path)
			var z bytes.Buffer
			w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
			w.Write(data)
			w.Close()
			if len(data) > 4<<20 || z.Len() > 1536<<10 {
				t.Errorf("%s is %d bytes, %d gzipped: over 4 MiB / 1.5 MiB", b, len(data), z.Len())
			}
			t.Logf("%s: %d bytes, %d gzipped", b, len(data), z.Len())
		}
	}
	// amd64 inside Debian 11 (glibc 2.31), where make probes left its sysroot.
	sr := sysroot("amd64")
	if _, err := os.Stat(filepath.Join(sr, ".done")); err == nil {
		for _, tc := range []struct {
			bin  string
			args []string
			code int
			gpus int
		}{{"nvmlprobe-linux-amd64", nil, report.ExitNoNVML, 0}, {"nvmlsim-linux-amd64", []string{"--mock", "dgxa100"}, 0, 8}} {
			dst := filepath.Join(sr, "gpulab-"+tc.bin)
			data, _ := os.ReadFile(filepath.Join(dist, tc.bin))
			if err := os.WriteFile(dst, data, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("chroot", append([]string{sr, "/gpulab-" + tc.bin}, tc.args...)...)
			out, _ := cmd.Output()
			os.Remove(dst)
			var s report.Snapshot
			if err := json.Unmarshal(out, &s); err != nil || cmd.ProcessState.ExitCode() != tc.code || len(s.GPUs) != tc.gpus {
				t.Errorf("%s in a Debian 11 chroot: exit %d, %d GPUs, %v\n%s", tc.bin, cmd.ProcessState.ExitCode(), len(s.GPUs), err, out)
			}
		}
	} else if os.Getenv("CI") != "" {
		t.Errorf("no Debian 11 sysroot in %s: make probes makes it", sr)
	}
	// arm64 under qemu-user: a loud skip without it (the checks above have
	// run), a failure under CI.
	qemu := testreq.Tool(t, "qemu-aarch64", "the arm64 probe is run under qemu-user (apt-get install qemu-user); it was checked for symbols only")
	srArm := sysroot("arm64")
	cmd := exec.Command(qemu, "-L", srArm, filepath.Join(dist, "nvmlprobe-linux-arm64"))
	out, _ := cmd.Output()
	var s report.Snapshot
	if err := json.Unmarshal(out, &s); err != nil || cmd.ProcessState.ExitCode() != report.ExitNoNVML || s.NVML.Available {
		t.Errorf("arm64 probe under qemu: exit %d, %v\n%s", cmd.ProcessState.ExitCode(), err, out)
	}
}

// sysroot is where probes/build.sh keeps its Debian 11 sysroot for arch:
// outside the repository, in $GPULAB_SYSROOT_CACHE or
// ~/.cache/gpulab-sysroot.
func sysroot(arch string) string {
	cache := os.Getenv("GPULAB_SYSROOT_CACHE")
	if cache == "" {
		home := os.Getenv("HOME")
		if home == "" {
			home = "/root"
		}
		cache = filepath.Join(home, ".cache", "gpulab-sysroot")
	}
	return filepath.Join(cache, "bullseye-"+arch)
}

// newer reports whether version a is newer than b ("2.34" > "2.28").
func newer(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x > y
		}
	}
	return false
}
