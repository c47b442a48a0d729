//go:build boringcrypto

package protocol

// boringCrypto is true in a GOEXPERIMENT=boringcrypto build, where
// crypto/sha256 is BoringCrypto's and allocates its state, so the
// signature check allocates too (its results are the same), and FIPS
// 140-3 mode cannot be turned on.
const boringCrypto = true
