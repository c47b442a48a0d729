package protocol_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/median-go/median/protocol"
)

// Keys kept in a secret manager: KeySource is called by New and then every
// KeyRefresh, so a rotated key takes effect without a restart. Close stops
// the reads once the server has shut down.
func ExampleConfig_keySource() {
	secrets := func(ctx context.Context) ([]string, error) {
		// Ask the secret manager here: the current key first, then any
		// key being retired.
		return []string{exampleKey}, nil
	}
	h, err := protocol.New(protocol.Config{KeySource: secrets, KeyRefresh: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	fmt.Println("ready")
	// Output: ready
}

// Keys in mounted secret files: with MEDIAN_KEY_FILE (and
// MEDIAN_KEY_PREVIOUS_FILE) set, the zero Config reads them every 2 s; a
// Kubernetes secret that is swapped, or a file rewritten in place, takes
// effect within seconds.
func ExampleHandler_Close() {
	dir, _ := os.MkdirTemp("", "median-key")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(dir+"/key", []byte(exampleKey+"\n"), 0o600)
	os.Setenv("MEDIAN_KEY_FILE", dir+"/key") // usually set by the deployment
	defer os.Unsetenv("MEDIAN_KEY_FILE")

	h, err := protocol.New(protocol.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close() // stops the reads of the key files
	fmt.Println("ready")
	// Output: ready
}
