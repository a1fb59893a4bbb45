package dgx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// How kubectl writes what it prints, without client-go: ages
// (duration.HumanDuration), quantities (resource.Quantity.String), tables
// (the table printer's tabwriter) and describe output (describe's
// tabwriter and its PrefixWriter). The byte-identity tests render the
// values of the recordings in recorded/kubectl-* with these.

// humanDuration is apimachinery's duration.HumanDuration: an age as
// kubectl prints it ("98s", "6m41s", "3h12m", "41d").
func humanDuration(d time.Duration) string {
	if s := int(d.Seconds()); s < -1 {
		return "<invalid>"
	} else if s < 0 {
		return "0s"
	} else if s < 120 {
		return fmt.Sprintf("%ds", s)
	}
	minutes := int(d / time.Minute)
	if minutes < 10 {
		if s := int(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", minutes, s)
		}
		return fmt.Sprintf("%dm", minutes)
	} else if minutes < 180 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	switch {
	case hours < 8:
		if m := minutes % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", hours, m)
		}
		return fmt.Sprintf("%dh", hours)
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 24*8:
		if h := hours % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", hours/24, h)
		}
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*2:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*8:
		if dy := hours / 24 % 365; dy != 0 {
			return fmt.Sprintf("%dy%dd", hours/24/365, dy)
		}
		return fmt.Sprintf("%dy", hours/24/365)
	}
	return fmt.Sprintf("%dy", hours/24/365)
}

// cpuQuantity is a CPU amount in millicores as a Quantity prints it:
// whole cores plain ("12"), otherwise millicores ("3920m").
func cpuQuantity(milli int64) string {
	if milli%1000 == 0 {
		return strconv.FormatInt(milli/1000, 10)
	}
	return strconv.FormatInt(milli, 10) + "m"
}

// binaryQuantity is an amount of bytes in the binary SI format
// ("170Mi", "15474676Ki"): the largest suffix that divides it exactly.
func binaryQuantity(b int64) string {
	if b == 0 {
		return "0"
	}
	suffixes := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	k := 0
	for k+1 < len(suffixes) && b%1024 == 0 {
		b /= 1024
		k++
	}
	return strconv.FormatInt(b, 10) + suffixes[k]
}

// rfc1123z is how describe writes a timestamp.
func rfc1123z(t time.Time) string { return t.Format(time.RFC1123Z) }

// describeWriter is kubectl describe's output: one tabwriter (minwidth
// 0, tabwidth 8, padding 2) over the whole description, written through
// a PrefixWriter that indents two spaces per level.
type describeWriter struct {
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newDescribeWriter() *describeWriter {
	d := &describeWriter{}
	d.tw = tabwriter.NewWriter(&d.buf, 0, 8, 2, ' ', 0)
	return d
}

// write is PrefixWriter.Write.
func (d *describeWriter) write(level int, format string, a ...any) {
	fmt.Fprintf(d.tw, strings.Repeat("  ", level)+format, a...)
}

// line is PrefixWriter.WriteLine.
func (d *describeWriter) line(s string) { fmt.Fprintln(d.tw, s) }

// flush is PrefixWriter.Flush: the columns before it no longer align
// with those after.
func (d *describeWriter) flush() { d.tw.Flush() }

func (d *describeWriter) String() string {
	d.tw.Flush()
	return d.buf.String()
}

// printTable is kubectl get's human-readable table: upper-case headers,
// tab-separated cells through the table printer's tabwriter (minwidth 6,
// tabwidth 4, padding 3). It prints nothing for no rows.
func printTable(header []string, rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 6, 4, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return buf.String()
}

// digest is a stable hex digest of its parts: the simulated cluster's
// ids (UIDs, machine ids, container ids) are derived from names, so that
// the same fleet shows the same ids.
func digest(parts ...string) string {
	s := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(s[:])
}

// uuidOf formats a digest of parts as a UUID.
func uuidOf(parts ...string) string {
	h := digest(parts...)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// suffixAlphabet is what Kubernetes draws generated name suffixes from
// (apimachinery's rand.String: no vowels, no confusable digits).
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// nameSuffix is a generated name suffix of n characters, derived from
// parts ("-x7k2p" of a Job's pod, "7d58d485c9" of a ReplicaSet).
func nameSuffix(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	b := make([]byte, n)
	for i := range b {
		b[i] = suffixAlphabet[int(h[i])%len(suffixAlphabet)]
	}
	return string(b)
}
