package dgx

import (
	"context"
)

func init() {
	tools["nvidia-ctk"] = nvidiaCTK
	tools["nvidia-container-cli"] = nvidiaContainerCLI
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
