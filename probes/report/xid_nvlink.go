package report

import (
	_ "embed"
	"strconv"
	"strings"
)

// NVLinkError is an NVLink5 Xid (144-150) as its message states it:
// "149, NETIR_LINK_EVT Fatal XC0 i0 Link 01 (0x021425c6 0x00000000 ...)",
// read against NVIDIA's decode table.
type NVLinkError struct {
	// Unit is the unit that raised it, as the driver names it.
	Unit string `json:"unit"`
	// DriverFatal is the driver's own word in the line: Fatal or Nonfatal.
	DriverFatal bool `json:"driver_fatal"`
	// Link is the NVLink's number; nil where the driver gives -1 (the
	// error is the GPU's, not one link's).
	Link        *int   `json:"link,omitempty"`
	IntrInfo    string `json:"intrinfo"`     // "0x021425c6"
	ErrorStatus string `json:"error_status"` // "0x00000000"
	// SubCode is bits 20-25 of the interrupt info: which event of the
	// unit it is (NVIDIA's "Xid 149.33").
	SubCode int `json:"sub_code"`
	// Decoded is true when NVIDIA's decode table holds the unit, status
	// and interrupt info; then Severity, Origin and Effect are the
	// table's. Otherwise the driver's word decides.
	Decoded  bool   `json:"decoded"`
	Severity string `json:"severity,omitempty"` // "Fatal", "Non-fatal"
	Origin   string `json:"origin,omitempty"`   // "HW", "SW", "HW/SW"
	Effect   string `json:"effect,omitempty"`   // on this GPU and its peer
	// Repeat is the table's action when the error repeats, if it gives one.
	Repeat string `json:"repeat_action,omitempty"`
}

// Fatal reports whether the error stops the work on this GPU or its
// link: the decode table's severity (Fatal, Link Fatal) or the driver's
// own word, whichever is worse.
func (e *NVLinkError) Fatal() bool {
	return e.DriverFatal || e.Decoded && strings.Contains(e.Severity, "Fatal")
}

// DecodeXIDMessage is DecodeXID with what the message adds: the NVLink5
// Xids 144-150 are decoded from their unit, error status and interrupt
// info, and NVIDIA's decode table's severity and resolution then stand
// for the code's. A message that does not read as NVLink5 leaves the
// code's meaning as it is.
func DecodeXIDMessage(code int, msg string) XIDInfo {
	info := DecodeXID(code)
	if code < 144 || code > 150 {
		return info
	}
	e, imm, inv, ok := decodeNVLink(code, msg)
	if !ok {
		return info
	}
	info.NVLink = e
	where := "the GPU's NVLink"
	if e.Link != nil {
		where = "NVLink " + strconv.Itoa(*e.Link)
	}
	sev := "non-fatal"
	switch {
	case e.Decoded && strings.HasPrefix(e.Severity, "Link Fatal"):
		sev = "fatal to the link"
	case e.Fatal():
		sev = "fatal"
	}
	info.Meaning = "NVLink5 " + e.Unit + " error on " + where + " (" + sev + ")"
	if e.Decoded {
		info.Immediate, info.Investigatory = imm, inv
		info.Action = resolutionText(imm, inv)
		if e.Effect != "" {
			info.Meaning += "; effect: " + e.Effect
		}
	} else {
		info.Meaning += "; not in NVIDIA's decode table (sub-code " + strconv.Itoa(e.SubCode) + ", status " + e.ErrorStatus + "): the driver's word decides"
	}
	info.Hardware = e.Fatal()
	return info
}

// decodeNVLink reads the message after "CODE, " of an NVLink5 Xid and
// looks it up in the decode table.
func decodeNVLink(code int, msg string) (e *NVLinkError, immediate, investigatory string, ok bool) {
	f := strings.Fields(msg)
	// pid=N, name=X, may come first.
	for len(f) > 0 && (strings.HasPrefix(f[0], "pid=") || strings.HasPrefix(f[0], "name=")) {
		f = f[1:]
	}
	// UNIT Fatal|Nonfatal XCn in Link N (0xINTR 0xSTATUS ...
	if len(f) < 7 || (f[1] != "Fatal" && f[1] != "Nonfatal") || f[4] != "Link" || !strings.HasPrefix(f[6], "(0x") {
		return nil, "", "", false
	}
	link, err := strconv.Atoi(f[5])
	if err != nil {
		return nil, "", "", false
	}
	intr, err1 := strconv.ParseUint(strings.TrimPrefix(f[6], "("), 0, 32)
	if len(f) < 8 {
		return nil, "", "", false
	}
	status, err2 := strconv.ParseUint(strings.TrimSuffix(f[7], ")"), 0, 32)
	if err1 != nil || err2 != nil {
		return nil, "", "", false
	}
	e = &NVLinkError{Unit: strings.TrimSuffix(f[0], ","), DriverFatal: f[1] == "Fatal",
		IntrInfo: "0x" + hex8(intr), ErrorStatus: "0x" + hex8(status), SubCode: int(intr>>20) & 0x3f}
	if link >= 0 {
		e.Link = &link
	}
	for _, r := range nvlinkRules()[code] {
		if r.status == uint32(status) && sameUnit(r.unit, e.Unit) && (bitsMatch(r.v2, uint32(intr)) || bitsMatch(r.v1, uint32(intr))) {
			e.Decoded, e.Severity, e.Origin, e.Effect, e.Repeat = true, r.severity, r.origin, r.effect, r.repeat
			return e, r.immediate, r.investigatory, true
		}
	}
	return e, "", "", true
}

func hex8(v uint64) string {
	s := strconv.FormatUint(v, 16)
	return strings.Repeat("0", max(0, 8-len(s))) + s
}

// sameUnit reports whether the table's unit and the line's name the same
// unit: either may give several names ("NETIR_LINK_EVT/NETIR_LINK_DOWN").
func sameUnit(table, line string) bool {
	for _, a := range strings.Split(table, "/") {
		for _, b := range strings.Split(line, "/") {
			if a != "" && strings.EqualFold(a, b) {
				return true
			}
		}
	}
	return false
}

// bitsMatch reports whether v has the bits pattern fixes: pattern is 32
// characters, most significant bit first, '1' and '0' fixed, '-' any.
func bitsMatch(pattern string, v uint32) bool {
	if len(pattern) != 32 {
		return false
	}
	for i := range 32 {
		bit := v >> (31 - i) & 1
		switch pattern[i] {
		case '1':
			if bit != 1 {
				return false
			}
		case '0':
			if bit != 0 {
				return false
			}
		}
	}
	return true
}

//go:embed xid_nvlink.tsv
var nvlinkTSV string

// nvlinkRule is one row of the decode table.
type nvlinkRule struct {
	unit, v1, v2                       string
	status                             uint32
	immediate, investigatory, severity string
	repeat, origin, effect             string
}

var nvlinkRulesOnce lazy[map[int][]nvlinkRule]

// nvlinkRules is the decode table by Xid, read once from xid_nvlink.tsv.
func nvlinkRules() map[int][]nvlinkRule {
	return nvlinkRulesOnce.get(parseNvlinkRules)
}

func parseNvlinkRules() map[int][]nvlinkRule {
	out := map[int][]nvlinkRule{}
	for _, line := range strings.Split(nvlinkTSV, "\n") {
		f := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || len(f) != 11 {
			continue
		}
		code, err := strconv.Atoi(f[0])
		status, err2 := strconv.ParseUint(f[4], 0, 32)
		if err != nil || err2 != nil {
			panic("xid_nvlink.tsv: " + line) // embedded data, checked by the tests
		}
		out[code] = append(out[code], nvlinkRule{unit: f[1], v1: f[2], v2: f[3], status: uint32(status),
			immediate: f[5], investigatory: f[6], severity: f[7], repeat: f[8], origin: f[9], effect: f[10]})
	}
	return out
}
