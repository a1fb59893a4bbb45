package parse

import (
	"strings"
	"testing"
)

func TestHostFixtures(t *testing.T) {
	n, err := ParseNumactl(fixture(t, "numactl-hardware", "asus-esc8000a-e12-2node-epyc9374f.txt"))
	if err != nil || len(n.Nodes) != 2 || n.Nodes[1].CPUs[0] != 32 || *n.Nodes[0].SizeMB != 193129 || n.Distances[0][1] != 32 {
		t.Errorf("numactl: %v %+v", err, n)
	}
	c, err := ParseLscpu(fixture(t, "lscpu-e", "asus-esc8000a-e12-2socket-epyc9374f.txt"))
	if err != nil || len(c.CPUs) != 64 || c.CPUs[4]["L1d:L1i:L2:L3"] != "16:16:16:4" || strings.Join(c.Sockets["1"], ",") != "1" {
		t.Errorf("lscpu: %v %+v", err, c.Sockets)
	}
	links, err := ParseIPBrLink(fixture(t, "ip-br-link", "server-cx6-ipoib-ibp-bond-trailing-space.txt"))
	if err != nil || links[3].Name != "eth20" || !links[3].Slave || links[3].State != "UP" || !links[4].InfiniBand {
		t.Errorf("ip -br link: %v %+v", err, links)
	}
	r, err := ParseRdmaLink(fixture(t, "rdma-link", "ib-format-mlx5_7-down-polling.txt"))
	if err != nil || len(r) != 1 || r[0].Active || r[0].PhysicalState != "POLLING" || *r[0].LID != 3403 || r[0].Port != 1 {
		t.Errorf("rdma link IB: %v %+v", err, r)
	}
	if _, err := ParseLscpu("hello world\n"); err == nil || !strings.Contains(err.Error(), "line 1: first line is not an lscpu -e header") {
		t.Errorf("lscpu garbage: %v", err)
	}
	if _, err := ParseRdmaLink("link mlx5_0/1 state ACTIVE\nport what\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("rdma garbage: %v", err)
	}
}

// FuzzParsers gives every parser every input: none may panic or return a
// nil value.
func FuzzParsers(f *testing.F) {
	for _, k := range Kinds() {
		f.Add(k.Name)
	}
	f.Add("node 0 cpus: 0 1\nnode distances:\nnode 0\n  0: 10\n")
	f.Add("CPU NODE SOCKET\n0 0 0\n")
	f.Add("link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev eth0\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range Kinds() {
			if v, _ := k.Parse(s); v == nil {
				t.Fatalf("%s returned nil", k.Name)
			}
		}
	})
}
