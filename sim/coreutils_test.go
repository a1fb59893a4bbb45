package sim

import (
	"context"
	"io/fs"
	"os/exec"
	"testing"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/orchestrator"
)

func TestModeString(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeDir | fs.ModeSticky | 0o777: "drwxrwxrwt",
		fs.ModeDir | fs.ModeSticky | 0o770: "drwxrwx--T",
		0o644:                              "-rw-r--r--",
		fs.ModeSymlink | 0o777:             "lrwxrwxrwx",
		fs.ModeDir | 0o700:                 "drwx------",
	} {
		if got := modeString(m); got != want {
			t.Errorf("modeString(%v) = %s, want %s", m, got, want)
		}
	}
}

// The simulated tools print what GNU's print: the same commands run by
// the real tools on this machine and on a simulated host give the same
// bytes and the same exit status.
func TestToolsAgreeWithGNU(t *testing.T) {
	sh := testreq.Tool(t, "bash", "the oracle for the simulated tools is GNU's (bash, grep, coreutils)")
	_, files := startFleet(t, Config{Hosts: 1})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	input := `printf 'gpu0 NV12 a\ngpu1 SYS b\ngpu2 NV12 a\nGPU3 PXB c\ngpu4 NV12 a\n\ngpu5 NV10 b\n'`
	for _, c := range []string{
		"grep -n -A1 -B1 SYS", "grep -C1 PXB", "grep -c NV12", "grep -v NV12", "grep -i gpu3", "grep -E 'NV1[02]'",
		"grep -o 'NV[0-9]*'", "grep -w a", "grep -x ''", "grep -q SYS", "grep nothing", "grep -m2 NV", "grep -A1 -m1 NV12",
		"sort", "sort -r", "sort -k2", "sort -u -k3", "uniq -c", "cut -d' ' -f2", "cut -c1-4", "head -3", "tail -2", "tail -n +6",
		"wc -l", "wc", "tr a-z A-Z", "tr -d ' '",
	} {
		cmd := input + " | " + c + "; echo rc=$?"
		want, _ := exec.Command(sh, "-c", cmd).Output()
		r := e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "t", Command: cmd}}}, nil)[0]
		if len(r.Steps) != 1 || string(r.Steps[0].Stdout) != string(want) {
			t.Errorf("%s:\nsimulated %q (stderr %q)\nGNU       %q", c, r.Steps[0].Stdout, r.Steps[0].Stderr, want)
		}
	}
}

// A link to a directory, named with a trailing slash, is the directory,
// as the kernel resolves it: [ -L link/ ] is false, [ -L link ] true;
// the same script in bash and on a simulated host says the same.
func TestTrailingSlashResolvesALink(t *testing.T) {
	sh := testreq.Tool(t, "bash", "the oracle for the simulated shell is bash")
	_, files := startFleet(t, Config{Hosts: 1})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	cmd := `d=$(mktemp -d) && mkdir "$d/real" && ln -s real "$d/lnk" && for p in lnk lnk/ real real/; do [ -L "$d/$p" ] && echo "$p link" || echo "$p no"; [ -d "$d/$p" ] && echo "$p dir"; [ ! -L "$d/$p" ] && echo "$p not"; test -h "$d/$p"; echo "$p $?"; done; rm -rf "$d"`
	want, err := exec.Command(sh, "-c", cmd).Output()
	if err != nil {
		t.Fatal(err)
	}
	r := e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "t", Command: cmd}}}, nil)[0]
	if len(r.Steps) != 1 || string(r.Steps[0].Stdout) != string(want) {
		t.Errorf("simulated %q (stderr %q)\nbash      %q", r.Steps[0].Stdout, r.Steps[0].Stderr, want)
	}
}
