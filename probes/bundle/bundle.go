// Package bundle holds the probe binaries embedded in gpulab, one per host
// architecture, and picks the one a host needs. It needs no cgo.
package bundle

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"strings"
)

//go:embed bin
var files embed.FS

// Arch maps `uname -m` to the Go architecture name of the probe to push.
func Arch(unameM string) (string, error) {
	switch strings.TrimSpace(unameM) {
	case "x86_64", "amd64":
		return "amd64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("no probe for machine type %q (probes exist for x86_64 and aarch64)", strings.TrimSpace(unameM))
}

// Probe returns the embedded probe for a Go architecture, and the same
// gzipped (as embedded, ready to push), or an error that says how to build
// it. With simulator, it is the build that carries the simulated DGX A100
// (for --mock), amd64 only.
func Probe(arch string, simulator bool) (data, gz []byte, err error) {
	name := "nvmlprobe-linux-" + arch
	if simulator {
		name = "nvmlsim-linux-" + arch
	}
	gz, err = files.ReadFile("bin/" + name + ".gz")
	if err != nil {
		return nil, nil, fmt.Errorf("this gpulab was built without %s: run `make probes` and rebuild (or pass --probe-binary FILE)", name)
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, nil, fmt.Errorf("embedded %s: %w", name, err)
	}
	if data, err = io.ReadAll(r); err != nil {
		return nil, nil, fmt.Errorf("embedded %s: %w", name, err)
	}
	return data, gz, nil
}
