package catalog

import (
	"crypto/rand"
	"fmt"
	"io"
)

// DevKeyLength is the length of a generated development key.
const DevKeyLength = 48

// devKeyAlphabet holds 64 visible ASCII characters that need no quoting in a
// shell, so a byte modulo 64 picks one without bias.
const devKeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// NewDevKey returns a random development key: DevKeyLength visible ASCII
// characters from crypto/rand, usable as a Median key. It is for running
// the examples locally, never for production.
func NewDevKey() string {
	b := make([]byte, DevKeyLength)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = devKeyAlphabet[int(b[i])%len(devKeyAlphabet)]
	}
	return string(b)
}

// warnDevKey tells whoever runs the example that key is a development key
// and how to use a real one.
func warnDevKey(w io.Writer, key string) {
	fmt.Fprintf(w, `
WARNING: MEDIAN_KEY is not set, so this server generated a DEVELOPMENT key:

    %s

  Only requests signed with this key are accepted; it changes on every
  start. Never use it in production.

  Run with your Median key:  MEDIAN_KEY='<the key from Median>' go run ./examples/<name>
  Sign test calls with this one, in the shell you send them from:
                             export MEDIAN_KEY='%s'

`, key, key)
}
