//go:build !race

package protocol

// raceEnabled is true under -race, where sync.Pool drops items on purpose,
// so allocation counts of pooled code are not meaningful.
const raceEnabled = false
