package benchharness

import (
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// usage is what getrusage reports of the whole process so far.
type usage struct {
	user, sys time.Duration
	// faults counts minor page faults: first touches of memory the OS had not yet given.
	faults int64
}

func readUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), faults: ru.Minflt}
}

// processCPU is the CPU time (user + system) of every thread of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the CPU time of the calling OS thread; callers lock their goroutine to its
// thread so the figure is theirs.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// memSnapshot is what the harness reads from the runtime's memory statistics.
type memSnapshot struct {
	totalAlloc, mallocs, heapAlloc, heapInuse uint64
}

func readMem() memSnapshot {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnapshot{totalAlloc: m.TotalAlloc, mallocs: m.Mallocs, heapAlloc: m.HeapAlloc, heapInuse: m.HeapInuse}
}

// settledHeap collects garbage until the live heap stops shrinking and returns it.
func settledHeap() memSnapshot {
	runtime.GC()
	prev := readMem()
	for range 4 {
		runtime.GC()
		cur := readMem()
		if cur.heapAlloc >= prev.heapAlloc {
			return cur
		}
		prev = cur
	}
	return prev
}

// quiesce waits until the process has used less than idle CPU time over a poll interval:
// asynchronous processors have finished what they were given. It gives up after limit.
func quiesce(limit time.Duration) bool {
	const poll = 50 * time.Millisecond
	idle := poll / 10
	deadline := time.Now().Add(limit)
	last := processCPU()
	for time.Now().Before(deadline) {
		time.Sleep(poll)
		cur := processCPU()
		if cur-last < idle {
			return true
		}
		last = cur
	}
	return false
}
