//go:build !boringcrypto

package protocol

const boringCrypto = false
