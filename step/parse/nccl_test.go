package parse

import (
	"strings"
	"testing"
)

func TestNCCLFixtures(t *testing.T) {
	n, err := ParseNCCL(fixture(t, "nccl-debug-info", "hgx-a100-net-socket-fallback-no-libibverbs-topo-dump.txt"))
	if err != nil || n.Transport != "NET/Socket" || len(n.SocketInterfaces) != 4 || !strings.Contains(n.Warnings[0].Message, "libibverbs") {
		t.Errorf("socket fallback: %v %+v", err, n)
	}
	n, _ = ParseNCCL(fixture(t, "nccl-debug-info", "roce-2node-16gpu-p2p-ipc-net-ib-gdrdma-pxn.txt"))
	if n.Transport != "NET/IB" || !n.GDRDMA || n.Channels["P2P/IPC"] != 10 || n.Channels["NET/IB/0/GDRDMA"] != 8 || n.Env["NCCL_IB_GID_INDEX"] != "3" {
		t.Errorf("roce pxn: %+v", n)
	}
	n, _ = ParseNCCL(fixture(t, "nccl-debug-info", "nccl2.27-roce400g-net-ib-device-discovery.txt"))
	if len(n.HCAs) != 3 || n.HCAs[1].Name != "mlx5_2" || n.HCAs[1].LinkType != "RoCE" || *n.HCAs[1].SpeedMb != 400000 || n.Env["NCCL_SOCKET_IFNAME"] != "enp25s0np0" {
		t.Errorf("roce discovery: %+v", n.HCAs)
	}
	n, _ = ParseNCCL(fixture(t, "nccl-debug-info", "azure-net-ib-completion-error12-warn.txt"))
	if len(n.Warnings) != 1 || !strings.HasSuffix(n.Warnings[0].Message, "vendor err 129 (Recv)") || n.Warnings[0].Source != "transport/net_ib.cc:1296" {
		t.Errorf("wrapped WARN: %+v", n.Warnings)
	}
	if _, err := ParseNCCL("hello\n"); err == nil || !strings.Contains(err.Error(), "not an NCCL_DEBUG=INFO log") {
		t.Errorf("garbage: %v", err)
	}
}
