package fluss

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time of the calling OS thread (getrusage
// RUSAGE_THREAD), so that a benchmark on a shared machine measures its own
// work, not the time it waited for a core. The caller locks its OS thread.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD, getrusage(2)
	var ru syscall.Rusage
	_ = syscall.Getrusage(rusageThread, &ru) // cannot fail for these arguments
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
