// Package startcpu records the process's CPU time as early as Go lets a
// program run code: in a package initialiser with no dependency but
// syscall, which the runtime runs before the heavy libraries' own (Go
// initialises packages in import-path order once their dependencies are,
// and github.com/argoexec sorts before the Kubernetes, minio and yaml
// modules).
//
// A container's first process inherits, across execve, the CPU its
// runtime spent setting the container up: runc's init is the same process
// until it executes argoexec, and getrusage counts it (about 20 ms on the
// testbed; the shell as a busybox container's PID 1 shows 2 ticks of
// 10 ms before it has done anything). Subtracting At from the CPU at the
// end gives what argoexec itself used, its runtime's start aside.
package startcpu

import (
	"syscall"
	"time"
)

// at is the CPU time when this package was initialised; -1 if getrusage failed.
var at = read()

func read() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// At is the process's CPU time (user+system) when its packages began to be
// initialised, and whether it could be read.
func At() (time.Duration, bool) { return at, at >= 0 }
