package step

import (
	"os"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/step/parse"
)

// The driver writes "GPU has fallen off the bus" beside its Xid 79: one
// event, counted once. A GPU that fell off the bus with no Xid is counted
// on its own (real kernel logs of both kinds).
func TestXidRecentCountsFallenOffBusOnce(t *testing.T) {
	for file, want := range map[string]string{
		"rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt": "1 hardware Xid event(s)",
		"fallen-off-bus-no-xid-multiline-drv570.txt":            "1 GPU(s) fallen off the bus without an Xid",
	} {
		data, err := os.ReadFile("../testdata/fixtures/dmesg-xid/" + file)
		if err != nil {
			t.Fatal(err)
		}
		k, err := parse.ParseDmesgXid(string(data))
		if err != nil {
			t.Fatal(err)
		}
		v := JudgeOutput("dmesg-xid", k)["xid-recent"]
		if v.Status != Fail || !strings.HasPrefix(v.Summary, want) {
			t.Errorf("%s: %s %q, want FAIL %q", file, v.Status, v.Summary, want)
		}
	}
}

// NCCL_IB_HCA against a real `rdma link` output: prefixes, '=' exact,
// ports, '^' exclusion, a name that matches nothing, a device that is down.
func TestNCCLEnvRule(t *testing.T) {
	data, err := os.ReadFile("../testdata/fixtures/rdma-link/moc-gpu-node-roce-6links-trailing-space.txt")
	if err != nil {
		t.Fatal(err)
	}
	links, _ := parse.ParseRdmaLink(string(data))
	for _, tc := range []struct{ hca, want string }{
		{"mlx5_2,mlx5_3:1", "PASS NCCL_IB_HCA name devices that are up"},
		{"mlx5", "PASS NCCL_IB_HCA name devices that are up"},
		{"^mlx5_0", "PASS NCCL_IB_HCA name devices that are up"},
		{"=mlx5", `FAIL NCCL_IB_HCA==mlx5: no device "mlx5" on this host`},
		{"mlx5_2,mlx4_0", `FAIL NCCL_IB_HCA=mlx5_2,mlx4_0: no device "mlx4_0" on this host`},
		{"mlx5_0", "FAIL NCCL_IB_HCA=mlx5_0: mlx5_0 is not up"},
	} {
		n := &parse.NCCL{Env: map[string]string{"NCCL_IB_HCA": tc.hca}}
		v := ncclEnv([]Input{{Step: "nccl", Value: n}, {Step: "rdma", Value: links}, {Step: "links", Value: []parse.Link{}}}, nil)
		if got := string(v.Status) + " " + v.Summary; !strings.HasPrefix(got, tc.want) {
			t.Errorf("NCCL_IB_HCA=%s: %s, want %s", tc.hca, got, tc.want)
		}
	}
}
