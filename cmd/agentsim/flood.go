package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// pieceSender sends each trace in pieces, as an SDK batch exporter sends a long run: its
// spans in the order they end, --pieces requests --piece-gap apart, the root in the last.
// Each trace waits on its own goroutine, so the run keeps its pace meanwhile.
type pieceSender struct {
	tp     *sdktrace.TracerProvider
	pieces int
	gap    time.Duration
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func (p *pieceSender) send(ctx context.Context, tr *agenttraffic.Trace) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := agenttraffic.ReplayInPieces(ctx, p.tp, tr, p.pieces, func(int) error {
			// Flushed now, so this piece is a request of its own.
			if err := p.tp.ForceFlush(ctx); err != nil {
				return fmt.Errorf("flush a piece: %w", err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(p.gap):
				return nil
			}
		})
		if err != nil {
			p.mu.Lock()
			p.err = errors.Join(p.err, err)
			p.mu.Unlock()
		}
	}()
}

// wait waits for every trace in flight and returns their errors.
func (p *pieceSender) wait() error {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// flood is the second tenant of --flood-rate: another service sending clean traces, whole,
// through its own exporter and provider, for as long as the run sends its own.
type flood struct {
	service string
	exp     *countingExporter
	tp      *sdktrace.TracerProvider
	stopped chan struct{}
	done    chan struct{}
	traces  int
	spans   int
	err     error
}

// floodSeed keeps the flood's trace ids apart from the run's for the same --seed.
const floodSeed = 0x5eed_f100d

func startFlood(ctx context.Context, o options) (*flood, error) {
	if o.floodRate <= 0 {
		return nil, nil
	}
	cfg := o.traffic
	cfg.Seed ^= floodSeed
	cfg.Service = o.floodService
	cfg.EveryScenario = false
	cfg.Scenarios = agenttraffic.ScenarioWeights{agenttraffic.ScenarioClean: 1}
	cfg.Interval = time.Duration(float64(time.Second) / o.floodRate)
	gen, err := agenttraffic.NewGenerator(cfg)
	if err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	raw, err := newExporter(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("flood: %w", err)
	}
	f := &flood{service: o.floodService, exp: &countingExporter{SpanExporter: raw},
		stopped: make(chan struct{}), done: make(chan struct{})}
	f.tp = agenttraffic.NewTracerProvider(o.floodService, sdktrace.WithBatcher(f.exp,
		sdktrace.WithBlocking(), sdktrace.WithMaxQueueSize(8192), sdktrace.WithBatchTimeout(200*time.Millisecond)))
	go f.run(ctx, gen, cfg.Interval)
	return f, nil
}

func (f *flood) run(ctx context.Context, gen *agenttraffic.Generator, every time.Duration) {
	defer close(f.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		tr := gen.Next()
		if err := agenttraffic.Replay(ctx, f.tp, &tr); err != nil {
			f.err = err
			return
		}
		f.traces++
		f.spans += len(tr.Spans)
		select {
		case <-ctx.Done():
			return
		case <-f.stopped:
			return
		case <-ticker.C:
		}
	}
}

// stop ends the flood, flushes what it sent and reports it; a nil flood reports nothing.
func (f *flood) stop(w io.Writer, timeout time.Duration) error {
	if f == nil {
		return nil
	}
	close(f.stopped)
	<-f.done
	flushErr := shutdown(f.tp, timeout)
	if _, err := fmt.Fprintf(w, "flood %s: %d clean traces, %d spans; exported %d spans, %d failed to export\n",
		f.service, f.traces, f.spans, f.exp.exported.Load(), f.exp.failed.Load()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	switch {
	case f.err != nil:
		return fmt.Errorf("flood: %w", f.err)
	case flushErr != nil:
		return fmt.Errorf("flood: %w", flushErr)
	case f.exp.err() != nil:
		return fmt.Errorf("flood: export: %w", f.exp.err())
	case f.exp.exported.Load() != int64(f.spans):
		return fmt.Errorf("flood: exported %d of %d spans", f.exp.exported.Load(), f.spans)
	}
	return nil
}
