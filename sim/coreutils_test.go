package sim

import (
	"io/fs"
	"testing"
)

func TestModeString(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeDir | fs.ModeSticky | 0o777: "drwxrwxrwt",
		fs.ModeDir | fs.ModeSticky | 0o770: "drwxrwx--T",
		0o644:                              "-rw-r--r--",
		fs.ModeSymlink | 0o777:             "lrwxrwxrwx",
		fs.ModeDir | 0o700:                 "drwx------",
	} {
		if got := modeString(m); got != want {
			t.Errorf("modeString(%v) = %s, want %s", m, got, want)
		}
	}
}
