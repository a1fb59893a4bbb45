package dgx

import (
	"embed"
	"strings"
)

// recorded holds the real outputs the tools replay: byte-identical copies
// of testdata/fixtures files (same paths), listed in recorded/INDEX.tsv
// with the rows of testdata's indexes.
//
//go:embed recorded
var recorded embed.FS

// recording returns a recorded output by its path under recorded/.
func recording(path string) string {
	data, err := recorded.ReadFile("recorded/" + path)
	if err != nil {
		panic("sim/dgx: recording " + path + " is not embedded: " + err.Error())
	}
	return string(data)
}

// The recordings the tools replay.
const (
	recQuery      = "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt"
	recKubectl    = "kubectl-version/client-v1.32.4-no-server-refused.txt"
	recAllReduce8 = "workloads/nccl-tests/all_reduce_1node-8xA100-40GB-old-nogroup-validation0-superbench.txt"
)

// queryBlocks splits the recorded nvidia-smi -q into its header (up to
// and with "Attached GPUs") and one block per GPU, each ending with the
// blank line after it.
func queryBlocks() (header string, gpus []string) {
	text := recording(recQuery)
	parts := strings.Split(text, "\nGPU ")
	header = parts[0] + "\n"
	for _, p := range parts[1:] {
		gpus = append(gpus, "GPU "+p+"\n")
	}
	gpus[len(gpus)-1] = strings.TrimSuffix(gpus[len(gpus)-1], "\n")
	return header, gpus
}
