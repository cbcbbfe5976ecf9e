package benchharness

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"time"
)

// CompareSample is one variant's figures from one paced run.
type CompareSample struct {
	Variant string
	Spans   int
	// CPU is the process CPU time of the run less the feeder's decoding.
	CPU time.Duration
	// SysCPU is the part of the process's CPU time spent in the kernel during the run, the
	// decoding's included; PageFaults counts the process's minor page faults in it.
	SysCPU     time.Duration
	PageFaults int64
	// AllocBytes and Allocs are the run's allocations less the decoding's.
	AllocBytes, Allocs uint64
	// KeptTraces and KeptSpans are what the variant forwarded.
	KeptTraces int
	KeptSpans  int64
	// Latencies are, for kept traces decided before shutdown, the time from the request
	// with their last span to their forwarding, sorted.
	Latencies []time.Duration
	// DecidedAtShutdown counts kept traces forwarded by Shutdown.
	DecidedAtShutdown int
}

// CPUPerSpan is the CPU time per span in nanoseconds.
func (s CompareSample) CPUPerSpan() float64 { return float64(s.CPU.Nanoseconds()) / float64(s.Spans) }

// AllocBytesPerSpan is the bytes allocated per span.
func (s CompareSample) AllocBytesPerSpan() float64 { return float64(s.AllocBytes) / float64(s.Spans) }

// AllocsPerSpan is the allocations per span.
func (s CompareSample) AllocsPerSpan() float64 { return float64(s.Allocs) / float64(s.Spans) }

// runCompare feeds the whole workload to the variant at rate spans per second, then shuts
// it down so every buffered trace is decided, and measures the process over both.
func runCompare(ctx context.Context, w *Workload, variant string, rate float64, decBytes, decAllocs uint64, profile io.Writer) (CompareSample, error) {
	s := CompareSample{Variant: variant, Spans: w.Spans()}
	out := newSink(w, time.Time{})
	sub, err := newSubject(ctx, variant, out, "")
	if err != nil {
		return s, err
	}
	if err := sub.start(ctx); err != nil {
		return s, fmt.Errorf("start %s: %w", variant, err)
	}
	// Collect and return to the OS what earlier runs left, so neither the collector nor the
	// scavenger works on it during this run.
	debug.FreeOSMemory()
	if profile != nil {
		if err := pprof.StartCPUProfile(profile); err != nil {
			return s, fmt.Errorf("start CPU profile: %w", err)
		}
	}
	m0, u0, cpu0 := readMem(), readUsage(), processCPU()
	start := time.Now()
	out.start = start
	fr, err := feed(ctx, w, sub.consumer, 0, w.Len(), rate, start)
	shutdownAt := time.Since(start)
	if stopErr := sub.shutdown(ctx); err == nil && stopErr != nil {
		err = fmt.Errorf("shut down %s: %w", variant, stopErr)
	}
	cpu1, u1, m1 := processCPU(), readUsage(), readMem()
	if profile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return s, err
	}
	s.CPU = cpu1 - cpu0 - fr.decodeCPU
	s.SysCPU, s.PageFaults = u1.sys-u0.sys, u1.faults-u0.faults
	s.AllocBytes = sub0(m1.totalAlloc-m0.totalAlloc, decBytes)
	s.Allocs = sub0(m1.mallocs-m0.mallocs, decAllocs)
	s.KeptSpans, s.KeptTraces = out.counts()
	for i, fwd := range out.forwarded {
		if fwd == 0 {
			continue
		}
		if fwd >= shutdownAt {
			s.DecidedAtShutdown++
			continue
		}
		s.Latencies = append(s.Latencies, fwd-fr.fedAt[w.traces[i].lastBatch])
	}
	slices.Sort(s.Latencies)
	return s, nil
}

func sub0(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// HeapSample is one variant's heap held per buffered span.
type HeapSample struct {
	Variant string
	Spans   int
	// HeapAlloc and HeapInuse are the growth of the live heap with every span buffered.
	HeapAlloc, HeapInuse int64
}

// PerSpan is the live heap held per buffered span in bytes.
func (h HeapSample) PerSpan() float64 { return float64(h.HeapAlloc) / float64(h.Spans) }

// runHeap feeds the whole workload to a variant told to hold every trace for an hour, waits
// until it has taken everything in, and measures the live heap against the started, empty
// processor.
func runHeap(ctx context.Context, w *Workload, variant string) (HeapSample, error) {
	h := HeapSample{Variant: variant, Spans: w.Spans()}
	out := newSink(w, time.Now())
	overrides := holdAll[variant]
	sub, err := newSubject(ctx, variant, out, overrides)
	if err != nil {
		return h, err
	}
	if err := sub.start(ctx); err != nil {
		return h, fmt.Errorf("start %s: %w", variant, err)
	}
	defer abandon(ctx, sub)
	before := settledHeap()
	if _, err := feed(ctx, w, sub.consumer, 0, w.Len(), 0, time.Now()); err != nil {
		return h, err
	}
	quiesce(time.Minute)
	after := settledHeap()
	if spans, _ := out.counts(); spans > 0 {
		return h, fmt.Errorf("%s forwarded %d spans while told to hold every trace", variant, spans)
	}
	h.HeapAlloc = int64(after.heapAlloc) - int64(before.heapAlloc)
	h.HeapInuse = int64(after.heapInuse) - int64(before.heapInuse)
	runtime.KeepAlive(sub)
	return h, nil
}
