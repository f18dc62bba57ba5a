//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
)

func randHex(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
