package benchharness

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// feedResult is what feeding a range of requests cost the harness itself.
type feedResult struct {
	// decodeCPU is the CPU time the feeding thread spent decoding requests: the receiver's
	// share, taken out of every variant's figures.
	decodeCPU time.Duration
	// fedAt is, per request of the workload, when it was handed over (since start); zero
	// for requests outside the range.
	fedAt []time.Duration
	spans int
}

// feed decodes requests [from, to) of w one at a time and hands each to c. With rate > 0 it
// paces them at rate spans per second from start; with 0 it sends as fast as c takes them.
// The goroutine stays on its OS thread so its decoding CPU can be measured.
func feed(ctx context.Context, w *Workload, c consumer.Traces, from, to int, rate float64, start time.Time) (feedResult, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	res := feedResult{fedAt: make([]time.Duration, w.Len())}
	sent := 0
	for i := from; i < to; i++ {
		if rate > 0 {
			due := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		t0 := threadCPU()
		td, err := w.Batch(i)
		res.decodeCPU += threadCPU() - t0
		if err != nil {
			return res, err
		}
		res.fedAt[i] = max(time.Since(start), 1)
		if err := c.ConsumeTraces(ctx, td); err != nil {
			return res, fmt.Errorf("consume request %d: %w", i, err)
		}
		sent += w.BatchSpans(i)
	}
	res.spans = sent
	return res, nil
}

// decodeAll decodes requests [from, to) up front, for runs that time wall clock and must
// not count decoding.
func decodeAll(w *Workload, from, to int) ([]ptrace.Traces, error) {
	out := make([]ptrace.Traces, 0, to-from)
	for i := from; i < to; i++ {
		td, err := w.Batch(i)
		if err != nil {
			return nil, err
		}
		out = append(out, td)
	}
	return out, nil
}

// feedParallel hands the decoded requests to c from n goroutines, request i to goroutine
// i mod n, as fast as c takes them.
func feedParallel(ctx context.Context, c consumer.Traces, tds []ptrace.Traces, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(tds); i += n {
				if err := c.ConsumeTraces(ctx, tds[i]); err != nil {
					errs[g] = fmt.Errorf("consume request %d: %w", i, err)
					return
				}
				tds[i] = ptrace.Traces{}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeAllocs is what decoding requests [from, to) allocates: taken out of every
// variant's allocation figures. Decoding is deterministic, so one pass measures it.
func decodeAllocs(w *Workload, from, to int) (bytes, objects uint64, err error) {
	runtime.GC()
	m0 := readMem()
	for i := from; i < to; i++ {
		if _, err := w.Batch(i); err != nil {
			return 0, 0, err
		}
	}
	m1 := readMem()
	return m1.totalAlloc - m0.totalAlloc, m1.mallocs - m0.mallocs, nil
}
