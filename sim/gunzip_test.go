package sim

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"testing/iotest"
)

// TestGunzipGivesWhatGzipGives: the fleet's shortcut for the probe it
// knows gives gzip -d's bytes, and every other stream, however close to
// the probe's, is decompressed as gzip would (its error included).
func TestGunzipGivesWhatGzipGives(t *testing.T) {
	f := &Fleet{}
	gz := f.probeGzip()
	if len(gz) == 0 {
		t.Fatal("no simulator probe embedded: run make probes")
	}
	flipped := bytes.Clone(gz)
	flipped[len(flipped)/2] ^= 0xff
	other := gzipOf(t, []byte("not the probe\n"))
	cases := map[string][]byte{
		"the probe":                 gz,
		"the probe twice (members)": append(bytes.Clone(gz), gz...),
		"the probe then text":       append(bytes.Clone(gz), "trailing"...),
		"the probe cut short":       gz[:len(gz)-100],
		"the probe, a byte changed": flipped,
		"another file":              other,
		"the other then the probe":  append(bytes.Clone(other), gz...),
		"nothing":                   nil,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			want, wantErr := gzipD(in)
			for _, r := range map[string]io.Reader{"whole": bytes.NewReader(in), "a byte at a time": iotest.OneByteReader(bytes.NewReader(in))} {
				var got bytes.Buffer
				err := gunzip(f, &got, r)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("error %v, gzip's %v", err, wantErr)
				}
				if wantErr == nil && !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("%d bytes out, gzip gives %d", got.Len(), len(want))
				}
			}
		})
	}
}

func gzipD(in []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func gzipOf(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
