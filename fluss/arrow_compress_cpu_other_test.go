//go:build !linux

package fluss

import "time"

// threadCPU falls back to wall time where RUSAGE_THREAD does not exist.
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }
