package protocol

// Regenerate the cross-language test vectors in testdata/ (keys.json and
// signatures.json) from the fixed keys and times in vectors_test.go:
//
//	go generate ./protocol
//
// which runs the same as: go test ./protocol -run '^TestVectors$' -update

//go:generate go test -run ^TestVectors$ -update .
