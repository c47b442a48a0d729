//go:build !unix

package testsupport

import "time"

// processCPU is 0 where the process's CPU time is not read: Paired then
// reports wall time only.
func processCPU() time.Duration { return 0 }
