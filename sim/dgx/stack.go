package dgx

import (
	"context"
	"strings"
)

func init() {
	tools["kubectl"] = kubectl
	tools["nvidia-ctk"] = nvidiaCTK
	tools["nvidia-container-cli"] = nvidiaContainerCLI
}

// kubectl has no cluster to talk to (a simulated cluster is later work):
// kubectl version answers as recorded on a machine without one
// (recorded/kubectl-version/client-v1.32.4-no-server-refused.txt: the
// client's lines on stdout, the refusal on stderr, exit 1); every other
// verb gets the same refusal. --client needs no server.
func kubectl(_ context.Context, _ *Host, t *term, args []string) int {
	rec := strings.SplitAfter(recording(recKubectl), "\n")
	client, refused := rec[0]+rec[1], rec[2]
	a := flags(args[1:])
	if len(a) > 0 && a[0] == "version" {
		t.print(client)
		if a.has("--client", "--client=true") {
			return 0
		}
	}
	t.eprint(refused)
	return 1
}

// NVIDIA Container Toolkit version of DGX OS 6 with driver 535 (late
// 2023); the tools' wording is the toolkit's, not a recording in testdata.
const toolkitVersion = "1.14.3"

func nvidiaCTK(_ context.Context, _ *Host, t *term, args []string) int {
	if len(args) == 2 && (args[1] == "--version" || args[1] == "-v") {
		t.print("NVIDIA Container Toolkit CLI version " + toolkitVersion + "\n")
		return 0
	}
	return t.fail(1, "the simulated nvidia-ctk answers --version only\n")
}

func nvidiaContainerCLI(_ context.Context, _ *Host, t *term, args []string) int {
	if len(args) == 2 && (args[1] == "--version" || args[1] == "-V") {
		t.print("cli-version: " + toolkitVersion + "\nlib-version: " + toolkitVersion + "\n")
		return 0
	}
	return t.fail(1, "the simulated nvidia-container-cli answers --version only\n")
}
