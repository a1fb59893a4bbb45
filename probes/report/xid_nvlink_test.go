package report

import (
	"strings"
	"testing"
)

// The NVLink5 Xids are read from real lines (testdata/fixtures/dmesg-xid,
// gb200-*) against NVIDIA's decode table.
func TestNVLinkXidDecode(t *testing.T) {
	for _, c := range []struct {
		name, line               string
		decoded, fatal           bool
		unit                     string
		link, subCode            int // link -1: none
		immediate, investigatory string
	}{
		{"149 link event, table: link fatal", "149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			true, true, "NETIR_LINK_EVT", 1, 33, "RESET_GPU", "INVESTIGATE_PEER_DEVICE"},
		{"149 on the GPU, not a link", "149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
			true, true, "NETIR", -1, 0, "RESET_GPU", "SYMPATHETIC_REPORT_SOLO"},
		{"145 receive pipe, non-fatal", "145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
			true, false, "RLW_RXPIPE", 13, 0, "IGNORE", "CONTACT_SUPPORT"},
		{"pid and name first", "145, pid=876767, name=ray::WorkerDict, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
			true, false, "RLW_RXPIPE", 13, 0, "IGNORE", "CONTACT_SUPPORT"},
		// Not in the table: the driver's word decides, never a pass.
		{"status the table lacks, driver says fatal", "145, RLW_RXPIPE Fatal XC0 i0 Link 2 (0x0409a0c2 0x00004000)",
			false, true, "RLW_RXPIPE", 2, 0, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
		{"unit the table lacks, driver says non-fatal", "147, NEW_UNIT Nonfatal XC0 i0 Link 2 (0x00000001 0x00000001)",
			false, false, "NEW_UNIT", 2, 0, "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR"},
	} {
		code := 0
		for _, r := range c.line[:3] {
			code = code*10 + int(r-'0')
		}
		msg := strings.TrimSpace(c.line[4:])
		info := DecodeXIDMessage(code, msg)
		e := info.NVLink
		if e == nil {
			t.Errorf("%s: not read as NVLink5: %+v", c.name, info)
			continue
		}
		link := -1
		if e.Link != nil {
			link = *e.Link
		}
		if e.Decoded != c.decoded || e.Fatal() != c.fatal || info.Hardware != c.fatal || e.Unit != c.unit || link != c.link || e.SubCode != c.subCode ||
			info.Immediate != c.immediate || info.Investigatory != c.investigatory || !info.Known {
			t.Errorf("%s: %+v %+v", c.name, info, e)
		}
		if !c.decoded && !strings.Contains(info.Meaning, "not in NVIDIA's decode table") {
			t.Errorf("%s: an undecoded error must say so: %q", c.name, info.Meaning)
		}
	}
	// A 144-150 line not in the NVLink5 form keeps its catalog meaning.
	if info := DecodeXIDMessage(149, "something else"); info.NVLink != nil || info.Mnemonic != "NVLINK_NETIR_ERROR" {
		t.Errorf("149 without the NVLink5 form: %+v", info)
	}
	if info := DecodeXIDMessage(79, "GPU has fallen off the bus."); info.NVLink != nil || info.Immediate != "RESTART_BM" {
		t.Errorf("79: %+v", info)
	}
}

// Every row of the decode table reads, and the interrupt info its own
// pattern describes finds a row of the same Xid and unit.
func TestNVLinkTableRows(t *testing.T) {
	n := 0
	for code, rules := range nvlinkRules() {
		if code < 144 || code > 150 {
			t.Errorf("Xid %d in the NVLink5 table", code)
		}
		for _, r := range rules {
			n++
			for _, p := range []string{r.v1, r.v2} {
				if p == "" {
					continue
				}
				v := uint64(0)
				for i := range 32 {
					if p[i] == '1' {
						v |= 1 << (31 - i)
					}
				}
				if !bitsMatch(p, uint32(v)) {
					t.Errorf("Xid %d %s: pattern %q does not match its own bits", code, r.unit, p)
				}
				unit := strings.Split(r.unit, "/")[0]
				msg := unit + " Nonfatal XC0 i0 Link 00 (0x" + hex8(v) + " 0x" + hex8(uint64(r.status)) + ")"
				if e, _, _, ok := decodeNVLink(code, msg); !ok || !e.Decoded {
					t.Errorf("Xid %d: %q not decoded", code, msg)
				}
			}
		}
	}
	if n != 94 {
		t.Errorf("%d decode rows, want NVIDIA's 94", n)
	}
}

// SXids: a sample against the Fabric Manager guide's classes.
func TestSXidCatalog(t *testing.T) {
	for _, c := range []struct {
		code      int
		msg       string
		known, hw bool
		mnemonic  string
	}{
		{11004, "Non-fatal, Link 36 ingress invalid ACL (First)", true, false, "Ingress invalid ACL"},
		{12028, "Non-fatal, Link 32 egress non-posted PRIV error (First)", true, false, "egress nonposted PRIV error"},
		{24007, "Fatal, Link 28 sourcetrack timeout error (First)", true, true, "sourcetrack timeout error"},
		{20034, "Fatal, Link 30 LTSSM Fault Up", true, true, "LTSSM Fault Up"},
		{10003, "Host_unhandled_interrupt", true, true, "Host_unhandled_interrupt"},
		{10004, "Non-fatal, thermal event", true, false, "Host_thermal_event_start"},
		{99999, "Fatal, Link 3 something new", false, true, ""},
		{99998, "Non-fatal, Link 3 something new", false, false, ""},
		// The switch's word worse than the table's: fatal, and said so.
		{22013, "Fatal, Link 3 x", true, true, "Minion Link DLREQ interrupt"},
	} {
		info := DecodeSXID(c.code, c.msg)
		if info.Known != c.known || info.Hardware != c.hw || info.Mnemonic != c.mnemonic || c.known && (info.Meaning == "" || info.Action == "") {
			t.Errorf("SXid %d %q: %+v", c.code, c.msg, info)
		}
	}
	if got := KnownSXIDs(); len(got) != 93 || got[0] != 10001 {
		t.Errorf("KnownSXIDs: %d from %v", len(got), got[:min(3, len(got))])
	}
	if !SXidDetail("Severity 0 Engine instance 42 Sub-engine instance 00") || !SXidDetail("Data {0x00000008, 0xff9fc39c}") || SXidDetail("Non-fatal, Link 36 x") {
		t.Error("SXidDetail")
	}
}
