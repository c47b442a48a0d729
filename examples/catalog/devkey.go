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
WARNING: MEDIAN_KEY is not set, so this server, which listens on loopback
only, generated a DEVELOPMENT key:

    %s

  Only requests signed with this key are accepted; it changes on every
  start. Never use it in production.

  Run with your Median key:  MEDIAN_KEY='<the key from Median>' go run ./examples/<name>
  Sign test calls with this one, in the shell you send them from:
                             export MEDIAN_KEY='%s'

`, key, key)
}

// warnNoKey tells whoever runs the example that without MEDIAN_KEY the
// endpoint answers every call 500 missing_secret, because it listens beyond
// loopback, where a generated key would let anyone who reads the log call
// the tools.
func warnNoKey(w io.Writer, addr string) {
	fmt.Fprintf(w, `
ERROR: MEDIAN_KEY is not set and this server listens on %s, beyond loopback.
  No development key is generated there: every Median call is answered
  500 missing_secret until you set MEDIAN_KEY to the key from Median.
  For a local try, unset HOST (the example then listens on 127.0.0.1).

`, addr)
}
