//go:build !unix

package cli

// divert does nothing where there is no dup2: stderr stays the terminal.
func (s *stderrLog) divert() error { return nil }

func (s *stderrLog) restore() {}
