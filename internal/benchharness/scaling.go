package benchharness

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// scalingOverrides keep held traces (no root) buffered for an hour while each measured
// trace (with its root) is decided as soon as its root arrives, and make room for a million
// spans.
const scalingOverrides = `
decision_wait: 1h
root_grace: 0s
max_buffered_bytes: 8589934592
`

// BufferedSample is retry_storm's cost per span with a number of spans held.
type BufferedSample struct {
	Held int
	// Measured is a round with the garbage collector on: its CPU per span depends on
	// whether a collection of the held heap fell into the round.
	Measured     time.Duration
	MeasuredSpan int
	// Mutator is a round with the garbage collector off: the processor's own work, with
	// Alloc the bytes it allocated (decoding taken out).
	Mutator      time.Duration
	MutatorSpans int
	Alloc        uint64
	// LiveHeap is the live heap with the held spans, and Cycle the CPU time of one full
	// collection of it.
	LiveHeap uint64
	Cycle    time.Duration
}

// MeasuredPerSpan is the CPU per span of the round with the collector on, nanoseconds.
func (b BufferedSample) MeasuredPerSpan() float64 {
	return float64(b.Measured.Nanoseconds()) / float64(b.MeasuredSpan)
}

// MutatorPerSpan is the CPU per span with the collector off, nanoseconds.
func (b BufferedSample) MutatorPerSpan() float64 {
	return float64(b.Mutator.Nanoseconds()) / float64(b.MutatorSpans)
}

// GCPerSpan is the collector's steady-state share per span, nanoseconds: with GOGC=100 a
// cycle runs each time allocation reaches the live heap, so a span's allocations cost
// Alloc/LiveHeap of a cycle.
func (b BufferedSample) GCPerSpan() float64 {
	if b.LiveHeap == 0 {
		return 0
	}
	return float64(b.Cycle.Nanoseconds()) * float64(b.Alloc) / float64(b.LiveHeap) / float64(b.MutatorSpans)
}

// CPUPerSpan is the steady-state cost per span: the processor's work plus its share of
// the collector, nanoseconds.
func (b BufferedSample) CPUPerSpan() float64 { return b.MutatorPerSpan() + b.GCPerSpan() }

// runBuffered holds at least held spans of the held workload in retry_storm, lets them wait
// age (Options.HeldAge), then measures pairs of rounds of the measured workload (rounds[r]
// is the request range of round r): the first of each pair with the garbage collector on,
// the second with it off.
func runBuffered(ctx context.Context, held, measured *Workload, heldSpans int, age time.Duration, rounds [][2]int) ([]BufferedSample, error) {
	out := newSink(measured, time.Now())
	sub, err := newSubject(ctx, VariantRetryStorm, out, scalingOverrides)
	if err != nil {
		return nil, err
	}
	if err := sub.start(ctx); err != nil {
		return nil, fmt.Errorf("start retry_storm: %w", err)
	}
	defer abandon(ctx, sub)
	n, spans := 0, 0
	for ; n < held.Len() && spans < heldSpans; n++ {
		spans += held.BatchSpans(n)
	}
	if spans < heldSpans {
		return nil, fmt.Errorf("held workload has %d spans, %d wanted", held.Spans(), heldSpans)
	}
	if _, err := feed(ctx, held, sub.consumer, 0, n, 0, time.Now()); err != nil {
		return nil, err
	}
	time.Sleep(age)
	quiesce(time.Minute)
	var samples []BufferedSample
	for r := 0; r+1 < len(rounds); r += 2 {
		s := BufferedSample{Held: spans}
		s.LiveHeap, s.Cycle = gcCycle()
		cpu, n, _, err := measureRound(ctx, measured, sub, rounds[r])
		if err != nil {
			return nil, err
		}
		s.Measured, s.MeasuredSpan = cpu, n
		runtime.GC()
		old := debug.SetGCPercent(-1)
		cpu, n, alloc, err := measureRound(ctx, measured, sub, rounds[r+1])
		debug.SetGCPercent(old)
		if err != nil {
			return nil, err
		}
		s.Mutator, s.MutatorSpans, s.Alloc = cpu, n, alloc
		samples = append(samples, s)
	}
	return samples, nil
}

// gcCycle returns the live heap and the CPU time of a full collection of it (the cheaper
// of two).
func gcCycle() (uint64, time.Duration) {
	runtime.GC()
	best := time.Duration(math.MaxInt64)
	for range 2 {
		c0 := processCPU()
		runtime.GC()
		best = min(best, processCPU()-c0)
	}
	return readMem().heapAlloc, best
}

// measureRound feeds one range of requests as fast as the processor takes them and waits
// until it is idle again: the CPU time and allocations, decoding taken out.
func measureRound(ctx context.Context, w *Workload, sub *subject, rng [2]int) (time.Duration, int, uint64, error) {
	decBytes, _, err := decodeAllocs(w, rng[0], rng[1])
	if err != nil {
		return 0, 0, 0, err
	}
	m0, cpu0 := readMem(), processCPU()
	fr, err := feed(ctx, w, sub.consumer, rng[0], rng[1], 0, time.Now())
	if err != nil {
		return 0, 0, 0, err
	}
	quiesce(time.Minute)
	cpu, m1 := processCPU(), readMem()
	return cpu - cpu0 - fr.decodeCPU, fr.spans, sub0(m1.totalAlloc-m0.totalAlloc, decBytes), nil
}

// abandon shuts a processor down with an expired context, so what it holds is dropped
// rather than decided (the measurement is over), and waits until it is idle.
func abandon(ctx context.Context, sub *subject) {
	expired, cancel := context.WithCancel(ctx)
	cancel()
	_ = sub.shutdown(expired)
	quiesce(time.Minute)
}

// CoresSample is retry_storm's throughput with GOMAXPROCS procs, and the machine's: the
// same number of goroutines hashing in a loop with nothing shared, run right after.
type CoresSample struct {
	Procs int
	Spans int
	Wall  time.Duration
	// Reference is the hashing loop's throughput, blocks per second.
	Reference float64
}

// SpansPerSecond is the throughput.
func (c CoresSample) SpansPerSecond() float64 { return float64(c.Spans) / c.Wall.Seconds() }

// referenceLoad hashes 1 KiB blocks on goroutines goroutines for about d and returns blocks
// per second: what the machine gives to work that shares nothing.
func referenceLoad(goroutines int, d time.Duration) float64 {
	var wg sync.WaitGroup
	counts := make([]int, goroutines)
	stop := time.Now().Add(d)
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var block [1024]byte
			for time.Now().Before(stop) {
				for range 64 {
					sum := sha256.Sum256(block[:])
					block[0] = sum[0]
				}
				counts[g] += 64
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	return float64(total) / time.Since(start).Seconds()
}

// coresOverrides decide each trace as soon as its root arrives, so the timed feed includes
// the decisions; num_shards stays 0 (GOMAXPROCS).
const coresOverrides = `
root_grace: 0s
`

// runCores sets GOMAXPROCS to procs, starts retry_storm (one shard per proc), feeds the
// decoded workload from two goroutines as fast as it is taken and shuts down: the wall time
// from the first request to the end of shutdown.
func runCores(ctx context.Context, w *Workload, procs int) (CoresSample, error) {
	c := CoresSample{Procs: procs, Spans: w.Spans()}
	old := runtime.GOMAXPROCS(procs)
	defer runtime.GOMAXPROCS(old)
	tds, err := decodeAll(w, 0, w.Len())
	if err != nil {
		return c, err
	}
	out := newSink(w, time.Now())
	sub, err := newSubject(ctx, VariantRetryStorm, out, coresOverrides)
	if err != nil {
		return c, err
	}
	if err := sub.start(ctx); err != nil {
		return c, fmt.Errorf("start retry_storm: %w", err)
	}
	runtime.GC()
	start := time.Now()
	err = feedParallel(ctx, sub.consumer, tds, 2)
	if stopErr := sub.shutdown(ctx); err == nil && stopErr != nil {
		err = fmt.Errorf("shut down retry_storm: %w", stopErr)
	}
	c.Wall = time.Since(start)
	c.Reference = referenceLoad(2, 500*time.Millisecond)
	return c, err
}
