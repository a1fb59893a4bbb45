package remote_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/probetest"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
)

// Install asks each real sshd host for its machine type and C library in
// the one round trip it had, and refuses a host whose glibc is older than
// the probe needs, or musl, before anything is pushed. The hosts' getconf
// and ldd are stubs first on their PATH that print what old or different
// systems print; a host whose C library cannot be read gets the probe,
// which runs there as on any host.
func TestInstallChecksTheHostsGlibc(t *testing.T) {
	data, err := os.ReadFile(probetest.Build(t, "nosim")) // built here: needs this machine's glibc
	if err != nil {
		t.Fatal(err)
	}
	need, err := bundle.NeedsGlibc(data)
	if err != nil {
		t.Fatal(err)
	}
	if need == "" || !newer(need, "2.17") || !newer(need, bundle.PortableGlibc) {
		testreq.Missing(t, "the probe built here needs glibc "+need+", no newer than the portable 2.28: this machine cannot show the refusal")
	}
	hosts := []struct {
		name    string
		getconf string // the stub's script, "" for the real getconf
		ldd     string
		want    string // the refusal; "" for an installed probe
	}{
		{"rhel7", "echo glibc 2.17", "", "host has glibc 2.17; this gpulab's probe was built here and needs glibc " + need +
			": build the portable probes with `make probes` (glibc >= 2.28) and rebuild gpulab"},
		{"rhel7-ldd", "exit 1", "echo 'ldd (GNU libc) 2.17'; echo 'Copyright (C) 2012 Free Software Foundation, Inc.'", "host has glibc 2.17; this gpulab's probe was built here"},
		{"alpine", "echo 'getconf: GNU_LIBC_VERSION: unknown variable' >&2; exit 1",
			"printf 'musl libc (x86_64)\\nVersion 1.2.4\\nDynamic Program Loader\\n' >&2; exit 1", "host has musl libc, not glibc; this gpulab's probe needs glibc " + need},
		{"unreadable", "exit 1", "echo 'ldd: unknown option'; exit 1", ""},
		{"here", "", "", ""},
	}
	root := t.TempDir()
	f := sshtest.Start(t, len(hosts), sshtest.Options{EnvFor: func(i int) map[string]string {
		dir := filepath.Join(root, hosts[i].name)
		stub(t, filepath.Join(dir, "bin", "getconf"), hosts[i].getconf)
		stub(t, filepath.Join(dir, "bin", "ldd"), hosts[i].ldd)
		return map[string]string{"PATH": filepath.Join(dir, "bin") + ":/usr/bin:/bin", "XDG_CACHE_HOME": filepath.Join(dir, "cache")}
	}})
	p := &remote.Prober{Source: func(string) ([]byte, []byte, error) { return data, nil, nil }}
	ctx := context.Background()
	for i, h := range hosts {
		t.Run(h.name, func(t *testing.T) {
			s := f.Servers[i]
			conn, err := (&orchestrator.Dialer{Keys: &orchestrator.Keyring{}}).Dial(ctx, orchestrator.Target{
				Name: s.Name, HostName: s.Addr, Port: s.Port, User: f.User,
				IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
				ConnectTimeout: 5 * time.Second, CommandTimeout: 30 * time.Second, InactivityTimeout: 30 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cache := filepath.Join(root, h.name, "cache")
			in, class, err := p.Install(ctx, conn, 30*time.Second)
			if h.want != "" {
				if in != nil || class != orchestrator.Error || err == nil || !strings.HasPrefix(err.Error(), h.want) {
					t.Fatalf("Install = %v, %s, %v; want refused: %q", in, class, err, h.want)
				}
				if _, err := os.Stat(cache); !os.IsNotExist(err) {
					t.Errorf("a refused host was written to: %s exists (%v)", cache, err)
				}
				return
			}
			if err != nil || class != orchestrator.OK {
				t.Fatalf("Install = %s, %v; want the probe installed", class, err)
			}
			snap, r := in.Snapshot(ctx, conn, p, h.name)
			in.Remove(ctx, conn)
			if snap == nil || snap.NVML.Available || r.ExitCode != report.ExitNoNVML {
				t.Errorf("the probe on %s: exit %d, %+v, %s", h.name, r.ExitCode, snap, r.Stderr)
			}
			if left, _ := filepath.Glob(filepath.Join(cache, "gpulab", "nvmlprobe-*")); len(left) != 0 {
				t.Errorf("the probe was left on the host: %v", left)
			}
		})
	}
}

// stub writes an executable shell script with body, or nothing when body
// is empty (the host's own program is then found later on PATH).
func stub(t *testing.T, path, body string) {
	t.Helper()
	if body == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// newer reports whether glibc version a is newer than b, as CheckLibc
// orders them: a host with b is refused a probe that needs a.
func newer(a, b string) bool {
	return bundle.CheckLibc(bundle.Libc{Name: "glibc", Version: b}, a) != nil
}
