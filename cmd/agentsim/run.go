package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// maxPrintedTraces caps the per-trace truth lines on stdout; --truth has all of them.
const maxPrintedTraces = 100

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentsim: %v\n", err)
		return 2
	}
	if err := simulate(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "agentsim: %v\n", err)
		return 1
	}
	return 0
}

// simulate sends the traces, flushes the provider and reports; it fails when any span did
// not reach the collector.
func simulate(ctx context.Context, o options, stdout io.Writer) error {
	// A trace spans about half a minute of planned time; starting the clock a minute back
	// makes traces look finished when they arrive, as a live agent's would.
	o.traffic.Base = time.Now().Add(-time.Minute)
	gen, err := agenttraffic.NewGenerator(o.traffic)
	if err != nil {
		return err
	}
	truth, err := openTruth(o.truthPath)
	if err != nil {
		return err
	}
	raw, err := newExporter(ctx, o)
	if err != nil {
		return err
	}
	exp := &countingExporter{SpanExporter: raw}
	// Blocking: a full queue slows the run down instead of dropping spans the truth counts.
	tp := agenttraffic.NewTracerProvider(o.traffic.Service, sdktrace.WithBatcher(exp,
		sdktrace.WithBlocking(), sdktrace.WithMaxQueueSize(8192), sdktrace.WithBatchTimeout(200*time.Millisecond)))
	fl, err := startFlood(ctx, o)
	if err != nil {
		return err
	}
	tally := &runTally{}
	emit := func(tr *agenttraffic.Trace) error { return agenttraffic.Replay(ctx, tp, tr) }
	inPieces := &pieceSender{tp: tp, pieces: o.pieces, gap: o.pieceGap}
	if o.pieces > 1 {
		emit = func(tr *agenttraffic.Trace) error { inPieces.send(ctx, tr); return nil }
	}
	sendErr := errors.Join(send(ctx, o, gen, emit, truth, tally), inPieces.wait())
	flushErr := shutdown(tp, o.timeout)
	truthErr := truth.close()
	if err := report(stdout, o, tally, exp); err != nil {
		return err
	}
	if err := fl.stop(stdout, o.timeout); err != nil {
		return err
	}
	switch {
	case sendErr != nil:
		return sendErr
	case flushErr != nil:
		return flushErr
	case truthErr != nil:
		return truthErr
	case exp.err() != nil:
		return fmt.Errorf("export to %s: %w", o.endpoint, exp.err())
	case exp.exported.Load() != int64(tally.summary.Total().Spans):
		return fmt.Errorf("exported %d of %d spans", exp.exported.Load(), tally.summary.Total().Spans)
	}
	return nil
}

// runTally is what the run sent.
type runTally struct {
	summary agenttraffic.Summary
	signals []agenttraffic.Truth
}

// send paces traces at --rate until --count or --duration is reached (a stale_cache pair is
// always completed) or ctx ends.
func send(ctx context.Context, o options, gen *agenttraffic.Generator, emit func(*agenttraffic.Trace) error,
	truth *truthWriter, tally *runTally) error {
	var tick <-chan time.Time
	if o.rate > 0 {
		ticker := time.NewTicker(o.traffic.Interval)
		defer ticker.Stop()
		tick = ticker.C
	}
	var deadline <-chan time.Time
	if o.duration > 0 {
		timer := time.NewTimer(o.duration)
		defer timer.Stop()
		deadline = timer.C
	}
	stop := false
	for sent := 0; ; sent++ {
		if (stop || o.count > 0 && sent >= o.count) && !gen.Pending() {
			return nil
		}
		tr := gen.Next()
		if err := emit(&tr); err != nil {
			return err
		}
		tally.summary.Add(&tr.Truth)
		if tr.Truth.Keep {
			tally.signals = append(tally.signals, tr.Truth)
		}
		if err := truth.write(&tr.Truth); err != nil {
			return err
		}
		stop = stop || pace(ctx, tick, deadline)
	}
}

// pace waits for the next tick (none when unpaced); it reports whether the run must stop.
func pace(ctx context.Context, tick, deadline <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return true
	case <-deadline:
		return true
	default:
	}
	if tick == nil {
		return false
	}
	select {
	case <-ctx.Done():
		return true
	case <-deadline:
		return true
	case <-tick:
		return false
	}
}

func shutdown(tp *sdktrace.TracerProvider, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("flush spans: %w", err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracer provider: %w", err)
	}
	return nil
}

// report prints the signal traces and the per-scenario table.
func report(w io.Writer, o options, tally *runTally, exp *countingExporter) error {
	var b strings.Builder
	if len(tally.signals) > 0 {
		fmt.Fprintln(&b, "signal traces (what a correct retry_storm keeps):")
		for i, t := range tally.signals {
			if i == maxPrintedTraces {
				fmt.Fprintf(&b, "  … %d more (see --truth)\n", len(tally.signals)-i)
				break
			}
			fmt.Fprintf(&b, "  %s  %-15s  %-21s  reason=%s storms=%d findings=%v\n",
				t.TraceID, t.Shape, t.Scenario, t.Reason, t.Storms, t.Findings)
		}
		fmt.Fprintln(&b)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := tally.summary.WriteTable(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s %s: exported %d spans, %d failed to export\n",
		o.protocol, o.endpoint, exp.exported.Load(), exp.failed.Load())
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// truthWriter writes one JSON line per trace; a nil writer discards.
type truthWriter struct {
	f   *os.File
	buf *bufio.Writer
	enc *json.Encoder
}

func openTruth(path string) (*truthWriter, error) {
	if path == "" {
		return &truthWriter{}, nil
	}
	// The truth lists the (synthetic) secrets the traces carry: keep it private.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open truth file: %w", err)
	}
	buf := bufio.NewWriter(f)
	return &truthWriter{f: f, buf: buf, enc: json.NewEncoder(buf)}, nil
}

func (t *truthWriter) write(tr *agenttraffic.Truth) error {
	if t.enc == nil {
		return nil
	}
	if err := t.enc.Encode(tr); err != nil {
		return fmt.Errorf("write truth: %w", err)
	}
	return nil
}

func (t *truthWriter) close() error {
	if t.f == nil {
		return nil
	}
	if err := t.buf.Flush(); err != nil {
		t.f.Close()
		return fmt.Errorf("write truth: %w", err)
	}
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("close truth file: %w", err)
	}
	return nil
}
