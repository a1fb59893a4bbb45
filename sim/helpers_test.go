package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
