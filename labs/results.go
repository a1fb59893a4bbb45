package labs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gpulab/gpulab/internal/fileio"
)

// RecordRef is a record found in a results directory.
type RecordRef struct {
	Dir    string  `json:"dir"`
	Record *Record `json:"record"`
}

// ListRecords finds every record.json under results (RESULTS/LAB/RUN/),
// newest first, each read as a list needs it (ReadSummary: no step's
// output). A record that cannot be read is an error naming its file; the
// others are still returned.
func ListRecords(results string) ([]RecordRef, error) {
	files, err := filepath.Glob(filepath.Join(GlobEscape(results), "*", "*", "record.json"))
	if err != nil {
		return nil, err
	}
	var out []RecordRef
	var bad []error
	for _, f := range files {
		r, err := ReadSummary(filepath.Dir(f))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, RecordRef{Dir: filepath.Dir(f), Record: r})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Record.Started.After(out[j].Record.Started) })
	if len(bad) > 0 {
		return out, fmt.Errorf("%d unreadable record(s), first: %w", len(bad), bad[0])
	}
	return out, nil
}

// ReadRecord reads dir/record.json: a regular file of at most
// fileio.MaxRecord bytes (a FIFO or a link to a device is an error).
func ReadRecord(dir string) (*Record, error) {
	path := filepath.Join(dir, "record.json")
	data, err := fileio.ReadRegular(path, fileio.MaxRecord)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != RecordSchema {
		return nil, fmt.Errorf("%s: record schema %d, this gpulab reads %d", path, r.Schema, RecordSchema)
	}
	return &r, nil
}

// ReadSummary reads dir/record.json as a list of records needs it: every
// field but the hosts' steps, whose outputs are most of a record (up to
// 1 MiB a stream, step and host). It streams the file, so a record of
// hundreds of MiB costs its largest single value in memory, not its size.
// The record it returns is marked a summary: ReadMarkdown reads the whole
// record when it must draw one.
func ReadSummary(dir string) (*Record, error) {
	path := filepath.Join(dir, "record.json")
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %s", fileio.ErrNotRegular, fileio.Kind(st.Mode()))}
	}
	if st.Size() > fileio.MaxRecord {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &fileio.TooLargeError{Max: fileio.MaxRecord}}
	}
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	// encoding/json matches keys whatever their case ("Hosts"): so does
	// the summary, which must read what ReadRecord reads.
	top, err := objectWithout(dec, func(key string, dec *json.Decoder) (json.RawMessage, bool, error) {
		if !strings.EqualFold(key, "hosts") {
			return nil, false, nil
		}
		if err := delim(dec, '['); err != nil {
			return nil, true, err
		}
		var hosts []json.RawMessage
		for dec.More() {
			if !startsObject(dec) { // null, as ReadRecord takes it
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return nil, true, err
				}
				hosts = append(hosts, raw)
				continue
			}
			h, err := objectWithout(dec, func(key string, dec *json.Decoder) (json.RawMessage, bool, error) {
				if !strings.EqualFold(key, "steps") {
					return nil, false, nil
				}
				return nil, true, skipValue(dec)
			})
			if err != nil {
				return nil, true, err
			}
			hosts = append(hosts, h)
		}
		if err := delim(dec, ']'); err != nil {
			return nil, true, err
		}
		raw, err := json.Marshal(hosts)
		return raw, true, err
	})
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF { // one object, as json.Unmarshal wants
			err = fmt.Errorf("invalid character after the record's object")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var r Record
	if err := json.Unmarshal(top, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != RecordSchema {
		return nil, fmt.Errorf("%s: record schema %d, this gpulab reads %d", path, r.Schema, RecordSchema)
	}
	r.summary = true
	return &r, nil
}

// objectWithout reads one JSON object from dec and writes it again, each
// member as it was unless field takes it over: field returns the value to
// keep in its place (nil: leave the member out) and true, having read it
// from dec itself.
func objectWithout(dec *json.Decoder, field func(key string, dec *json.Decoder) (json.RawMessage, bool, error)) (json.RawMessage, error) {
	if err := delim(dec, '{'); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("a record's key is %v", t)
		}
		raw, taken, err := field(key, dec)
		if err != nil {
			return nil, err
		}
		if !taken {
			if err := dec.Decode(&raw); err != nil {
				return nil, err
			}
		}
		if raw == nil {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(raw)
	}
	if err := delim(dec, '}'); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return json.RawMessage(b.String()), nil
}

// startsObject says whether dec's next value is an object, reading
// nothing.
func startsObject(dec *json.Decoder) bool {
	rest := dec.Buffered()
	var b [1]byte
	for {
		if _, err := rest.Read(b[:]); err != nil {
			return true // not buffered yet: objectWithout reads and says
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n', ',':
			continue
		}
		return b[0] == '{'
	}
}

// delim reads the delimiter want from dec.
func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("not a record: %v where %v belongs", t, want)
	}
	return nil
}

// skipValue reads one JSON value from dec, token by token, keeping none.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// recordSimulated reads whether the record in dir is of a simulated fleet
// from the start of its record.json, not the whole of it (a record holds
// every step's output): a record's top-level fields come in Record's
// order, and simulated (left out when false) comes before hosts, where the
// outputs are. A record of another schema is an error.
func recordSimulated(dir string) (bool, error) {
	path := filepath.Join(dir, "record.json")
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s: %w", path, fileio.ErrNotRegular)
	}
	dec := json.NewDecoder(bufio.NewReader(f))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false, fmt.Errorf("%s: not a record", path)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
		switch k {
		case "schema":
			var schema int
			if err := dec.Decode(&schema); err != nil || schema != RecordSchema {
				return false, fmt.Errorf("%s: record schema %d, this gpulab reads %d", path, schema, RecordSchema)
			}
			continue
		case "simulated":
			var sim bool
			if err := dec.Decode(&sim); err != nil {
				return false, fmt.Errorf("%s: %w", path, err)
			}
			return sim, nil
		case "hosts":
			return false, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false, fmt.Errorf("%s: %w", path, err)
		}
	}
	return false, nil
}

// ReadMarkdown returns dir/record.md, the record as gpulab wrote it for
// people, or r's Markdown where dir has no record.md. A record.md that is
// there but cannot be read (a FIFO, a link to a device, a file over
// fileio.MaxRecord) is an error that says why: it is not passed over.
func ReadMarkdown(dir string, r *Record) (string, error) {
	md, err := fileio.ReadRegular(filepath.Join(dir, "record.md"), fileio.MaxRecord)
	switch {
	case errors.Is(err, fs.ErrNotExist) && r.summary:
		whole, err := ReadRecord(dir) // a summary has no steps to draw
		if err != nil {
			return "", err
		}
		return whole.Markdown(), nil
	case errors.Is(err, fs.ErrNotExist):
		return r.Markdown(), nil
	case err != nil:
		return "", fmt.Errorf("the record's Markdown is unreadable: %w", err)
	}
	return string(md), nil
}

// CompareRow is one record (one host of it) in a comparison: the standard
// result columns and, against the baseline (the first record), the
// interference coefficients.
type CompareRow struct {
	Dir        string   `json:"dir"`
	Lab        string   `json:"lab"`
	Host       string   `json:"host"`
	Workload   string   `json:"workload"`
	Mode       string   `json:"mode"`
	Request    string   `json:"request"`
	Throughput *float64 `json:"throughput"`
	Unit       string   `json:"unit"`
	P50        *float64 `json:"p50"`
	P95        *float64 `json:"p95"`
	P99        *float64 `json:"p99"`
	Passed     bool     `json:"passed"`
	// Undecided: the host did not pass only because some criteria could
	// not be decided (HostRecord.Undecided).
	Undecided bool `json:"undecided,omitempty"`
	Complete  bool `json:"complete"`
	// NotRun: no step ran on any host (Record.NotRun says why).
	NotRun bool `json:"not_run,omitempty"`
	// Simulated: the record is of a simulated fleet (Record.Simulated).
	Simulated bool `json:"simulated,omitempty"`
	// ThroughputRatio is throughput ÷ the baseline's; P99Coefficient is
	// P99 ÷ the baseline's (the interference coefficient of the seed:
	// shared ÷ exclusive for the same metric).
	ThroughputRatio *float64 `json:"throughput_ratio"`
	P99Coefficient  *float64 `json:"p99_interference_coefficient"`
	Baseline        bool     `json:"baseline"`
}

// Compare lays records side by side, one row per host. The first record
// is the baseline: every row of it is marked Baseline, and a row's ratios
// divide by the baseline's row for the same host (an interference
// coefficient compares a host with itself), or by the baseline's first
// row for a host the baseline did not run on.
func Compare(refs []RecordRef) []CompareRow {
	var rows []CompareRow
	for i, ref := range refs {
		r := ref.Record
		for _, h := range r.Hosts {
			row := CompareRow{Dir: ref.Dir, Lab: r.Lab, Host: h.Host, Workload: r.Result.Workload, Mode: r.Result.Mode, Request: r.Result.Request,
				Unit: r.Result.Unit, Passed: h.passes(), Undecided: len(h.Undecided()) > 0, Complete: r.Complete, NotRun: r.NotRun != "", Simulated: r.Simulated, Baseline: i == 0,
				Throughput: number(h.Metrics, r.Result.Throughput), P50: number(h.Metrics, r.Result.P50),
				P95: number(h.Metrics, r.Result.P95), P99: number(h.Metrics, r.Result.P99)}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return rows
	}
	byHost := map[string]CompareRow{}
	for _, r := range rows {
		if _, seen := byHost[r.Host]; r.Baseline && !seen {
			byHost[r.Host] = r
		}
	}
	for i := range rows {
		base, ok := byHost[rows[i].Host]
		if !ok {
			base = rows[0]
		}
		rows[i].ThroughputRatio = ratio(rows[i].Throughput, base.Throughput)
		rows[i].P99Coefficient = ratio(rows[i].P99, base.P99)
	}
	return rows
}

func number(m map[string]any, name string) *float64 {
	if name == "" {
		return nil
	}
	switch v := m[name].(type) {
	case float64:
		return &v
	case int64:
		f := float64(v)
		return &f
	case json.Number:
		f, err := v.Float64()
		if err == nil {
			return &f
		}
	}
	return nil
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	r := *a / *b
	return &r
}

// GlobEscape quotes the glob metacharacters in a literal path: run names
// carry node sets such as gpu[01-08].
func GlobEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "*", `\*`, "?", `\?`).Replace(s)
}

// Query selects records: each set field must match.
type Query struct {
	Lab string
	// Hosts keeps the records that ran on any of these hosts.
	Hosts []string
	// Status is passed, failed, undecided or incomplete.
	Status string
	// Since keeps the records started at or after it.
	Since time.Time
	// Last keeps only the newest N (after the other fields).
	Last int
}

// Statuses a Query can ask for.
var Statuses = []string{"passed", "failed", "undecided", "incomplete"}

// Status is a record's outcome in one word: incomplete (interrupted or
// still running), passed, undecided (nothing failed, some criteria could
// not be decided: Undecided) or failed.
func (r *Record) Status() string {
	switch {
	case !r.Complete:
		return "incomplete"
	case r.passes():
		return "passed"
	case len(r.Undecided()) > 0:
		return "undecided"
	}
	return "failed"
}

// Outcome is the record's Status as a list shows it, told apart further:
// interrupted and not run are incomplete records of two kinds.
func (r *Record) Outcome() string {
	switch {
	case !r.Complete && r.Interrupted:
		return "interrupted"
	case r.NotRun != "":
		return "not run"
	}
	return r.Status()
}

// Outcome is the row's result in one word, as Record.Outcome for a host:
// not run, incomplete, passed, undecided or failed.
func (c CompareRow) Outcome() string {
	switch {
	case c.NotRun:
		return "not run"
	case !c.Complete:
		return "incomplete"
	case c.Passed:
		return "passed"
	case c.Undecided:
		return "undecided"
	}
	return "failed"
}

// Select returns the records that match q, in the order given.
func (q Query) Select(refs []RecordRef) []RecordRef {
	var out []RecordRef
	for _, ref := range refs {
		r := ref.Record
		switch {
		case q.Lab != "" && r.Lab != q.Lab,
			q.Status != "" && r.Status() != q.Status,
			!q.Since.IsZero() && r.Started.Before(q.Since):
			continue
		}
		if len(q.Hosts) > 0 && !slices.ContainsFunc(r.Hosts, func(h HostRecord) bool { return slices.Contains(q.Hosts, h.Host) }) {
			continue
		}
		out = append(out, ref)
		if q.Last > 0 && len(out) == q.Last {
			break
		}
	}
	return out
}
