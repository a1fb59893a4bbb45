package sim

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"

	"github.com/gpulab/gpulab/probes/bundle"
)

// gunzip writes what gzip -d makes of r to w (f may be nil). gpulab pushes its probe
// gzipped to every host, so a fleet decompressed the same 1.8 MB into
// the same 5 MB once a host: on a thousand hosts that was most of the
// simulated hosts' own CPU. A stream whose bytes are exactly the embedded
// simulator probe's gzip, compared as they arrive, is answered with that
// probe's bytes, which is what decompressing it gives; at the first byte
// that differs, the stream (the matched part replayed) is decompressed
// as any other.
func gunzip(f *Fleet, w io.Writer, r io.Reader) error {
	if gz := f.probeGzip(); len(gz) > 0 {
		matched, rest, err := matchPrefix(r, gz)
		if err != nil {
			return err
		}
		if rest == nil {
			data, err := f.probeData()
			if err != nil {
				return err
			}
			_, err = w.Write(data)
			return err
		}
		r = io.MultiReader(bytes.NewReader(gz[:matched]), rest)
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return errors.New("not in gzip format")
	}
	_, err = io.Copy(w, zr)
	return err
}

// matchPrefix reads r while it matches want. It returns rest == nil when
// r held exactly want; else how much of want matched and a reader of
// everything r held after that (its read error included, after what
// came before it: gzip -d writes what it could decode first).
func matchPrefix(r io.Reader, want []byte) (matched int, rest io.Reader, err error) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if matched+n > len(want) || !bytes.Equal(buf[:n], want[matched:matched+n]) {
				return matched, io.MultiReader(bytes.NewReader(buf[:n]), r), nil
			}
			matched += n
		}
		switch {
		case err == io.EOF && matched == len(want):
			return matched, nil, nil
		case err == io.EOF:
			return matched, eofReader{}, nil
		case err != nil:
			return matched, errReader{err}, nil
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// probeGzip is the embedded simulator probe as gpulab pushes it (nil
// when none is embedded, or f is nil).
func (f *Fleet) probeGzip() []byte {
	if f == nil {
		return nil
	}
	f.gzOnce.Do(func() {
		_, f.gz, _ = bundle.Probe(runtime.GOARCH, true)
	})
	return f.gz
}

// probeData is the simulator probe, decompressed once a fleet: the copy
// sealedProbe writes and what gunzip answers are the same bytes.
func (f *Fleet) probeData() ([]byte, error) {
	f.dataOnce.Do(func() {
		f.data, _, f.dataErr = bundle.Probe(runtime.GOARCH, true)
	})
	return f.data, f.dataErr
}
