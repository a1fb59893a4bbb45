package dgx

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["ip"] = ip
	tools["rdma"] = rdma
	tools["ibv_devinfo"] = ibvDevinfo
}

// netIf is a network interface of the host.
type netIf struct {
	name, state, addr, flags string
	mtu                      int
	kind, brd                string
}

// ipoibAddr is an IPoIB interface's 20-byte hardware address: queue
// pair, GID prefix, port GUID.
func ipoibAddr(qpn int, guid string) string {
	g := strings.ReplaceAll(guid, ":", "")
	var bytes []string
	for k := 0; k < len(g); k += 2 {
		bytes = append(bytes, g[k:k+2])
	}
	return fmt.Sprintf("00:00:%02x:%02x:fe:80:00:00:00:00:00:00:%s", qpn>>8&0xff, qpn&0xff, strings.Join(bytes, ":"))
}

// interfaces are the host's: loopback, the management port, and an IPoIB
// interface per compute HCA.
func (h *Host) interfaces() []netIf {
	ifs := []netIf{
		{name: "lo", state: "UNKNOWN", addr: "00:00:00:00:00:00", flags: "LOOPBACK,UP,LOWER_UP", mtu: 65536, kind: "loopback", brd: "00:00:00:00:00:00"},
		{name: "enp226s0", state: "UP", addr: fmt.Sprintf("04:3f:72:c3:%02x:%02x", 0x10+h.Index>>8&0xff, h.Index&0xff), flags: "BROADCAST,MULTICAST,UP,LOWER_UP", mtu: 1500, kind: "ether", brd: "ff:ff:ff:ff:ff:ff"},
	}
	for k, n := range spec.NICs {
		ifs = append(ifs, netIf{name: n.Netdev, state: "UP", addr: ipoibAddr(0x1029+k, n.GUID), flags: "BROADCAST,MULTICAST,UP,LOWER_UP",
			mtu: 4092, kind: "infiniband", brd: "00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff"})
	}
	return ifs
}

// ip answers ip -br link (iproute2's brief form: name and state padded to
// 16 and 14, a trailing space, as in testdata/fixtures/ip-br-link/
// server-cx6-ipoib-ibp-bond-trailing-space.txt) and ip link (its long form,
// not recorded in testdata).
func ip(_ context.Context, h *Host, t *term, args []string) int {
	a := flags(args[1:])
	brief := a.has("-br", "-brief", "--brief")
	var rest []string
	for _, w := range a {
		if w != "-br" && w != "-brief" && w != "--brief" {
			rest = append(rest, w)
		}
	}
	if len(rest) == 0 || (rest[0] != "link" && rest[0] != "l") || len(rest) > 2 || len(rest) == 2 && rest[1] != "show" {
		return t.fail(1, "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n       ip [ -force ] -batch filename\n"+
			"where  OBJECT := { link }   (the simulated host answers ip link and ip -br link)\n")
	}
	var b strings.Builder
	for k, i := range h.interfaces() {
		if brief {
			b.WriteString(ipBrief(i))
			continue
		}
		qdisc, qlen := "mq", 1000
		if i.kind == "loopback" {
			qdisc = "noqueue"
		}
		if i.kind == "infiniband" {
			qlen = 256
		}
		fmt.Fprintf(&b, "%d: %s: <%s> mtu %d qdisc %s state %s mode DEFAULT group default qlen %d\n    link/%s %s brd %s\n",
			k+1, i.name, i.flags, i.mtu, qdisc, i.state, qlen, i.kind, i.addr, i.brd)
	}
	t.print(b.String())
	return 0
}

func ipBrief(i netIf) string {
	return fmt.Sprintf("%-16s %-14s %s <%s> \n", i.name, i.state, i.addr, i.flags)
}

// rdma answers rdma link (rdma link show): the InfiniBand form of
// testdata/fixtures/rdma-link/ib-format-mlx5_7-down-polling.txt, with the
// netdev and the trailing space iproute2 prints (rdma-link/
// moc-gpu-node-roce-6links-trailing-space.txt).
func rdma(_ context.Context, h *Host, t *term, args []string) int {
	a := flags(args[1:])
	if len(a) == 0 || a[0] != "link" || len(a) > 2 || len(a) == 2 && a[1] != "show" {
		return t.fail(1, "Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { dev | link | resource | system | statistic | help }\n")
	}
	var b strings.Builder
	for _, n := range spec.NICs {
		state, phys := "ACTIVE", "LINK_UP"
		if h.Faults.IBPortOf(n.Name).Down { // the ib knob: as the probe's sysfs says
			state, phys = "DOWN", "POLLING"
		}
		fmt.Fprintf(&b, "link %s/1 subnet_prefix fe80:0000:0000:0000 lid %d sm_lid 1 lmc 0 state %s physical_state %s netdev %s \n", n.Name, n.LID, state, phys, n.Netdev)
	}
	t.print(b.String())
	return 0
}

// ibvDevinfo is ibv_devinfo in the layout of testdata/fixtures/ibv_devinfo/
// asus-esc8000a-e12-4x-cx7-eth-portdown.txt, for ConnectX-6 HDR adapters
// with their InfiniBand ports up.
func ibvDevinfo(_ context.Context, h *Host, t *term, args []string) int {
	if len(args) > 1 {
		return t.fail(255, fmt.Sprintf("ibv_devinfo: unrecognized option '%s'\n", args[1]))
	}
	var blocks []string
	for _, n := range spec.NICs {
		state := "PORT_ACTIVE (4)"
		if h.Faults.IBPortOf(n.Name).Down {
			state = "PORT_DOWN (1)"
		}
		blocks = append(blocks, ibvBlock(ibvDevice{name: n.Name, fw: "20.39.1002", guid: n.GUID, sysGUID: n.GUID, part: 4123,
			board: "MT_0000000223", state: state, activeMTU: "4096 (5)", smLID: 1, lid: n.LID, layer: "InfiniBand"}))
	}
	t.print(strings.Join(blocks, "\n"))
	return 0
}

type ibvDevice struct {
	name, fw, guid, sysGUID, board, state, activeMTU, layer string
	part, smLID, lid                                        int
}

func ibvBlock(d ibvDevice) string {
	return fmt.Sprintf("hca_id: %s\n", d.name) +
		fmt.Sprintf("        %-32s%s\n", "transport:", "InfiniBand (0)") +
		fmt.Sprintf("        %-32s%s\n", "fw_ver:", d.fw) +
		fmt.Sprintf("        %-32s%s\n", "node_guid:", d.guid) +
		fmt.Sprintf("        %-32s%s\n", "sys_image_guid:", d.sysGUID) +
		fmt.Sprintf("        %-32s%s\n", "vendor_id:", "0x02c9") +
		fmt.Sprintf("        %-32s%d\n", "vendor_part_id:", d.part) +
		fmt.Sprintf("        %-32s%s\n", "hw_ver:", "0x0") +
		fmt.Sprintf("        %-32s%s\n", "board_id:", d.board) +
		fmt.Sprintf("        %-32s%d\n", "phys_port_cnt:", 1) +
		"                port:   1\n" +
		fmt.Sprintf("                        %-24s%s\n", "state:", d.state) +
		fmt.Sprintf("                        %-24s%s\n", "max_mtu:", "4096 (5)") +
		fmt.Sprintf("                        %-24s%s\n", "active_mtu:", d.activeMTU) +
		fmt.Sprintf("                        %-24s%d\n", "sm_lid:", d.smLID) +
		fmt.Sprintf("                        %-24s%d\n", "port_lid:", d.lid) +
		fmt.Sprintf("                        %-24s%s\n", "port_lmc:", "0x00") +
		fmt.Sprintf("                        %-24s%s\n", "link_layer:", d.layer)
}
