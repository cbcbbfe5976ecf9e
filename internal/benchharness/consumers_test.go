package benchharness

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestFloorReadsEverySpan(t *testing.T) {
	w := newTestWorkload(t, WorkloadConfig{Seed: 2, Traces: 20, BatchSpans: 64})
	f := &floor{}
	for i := range w.Len() {
		if err := f.ConsumeTraces(context.Background(), decode(t, w, i)); err != nil {
			t.Fatal(err)
		}
	}
	if f.spans != int64(w.Spans()) {
		t.Fatalf("floor read %d spans of %d", f.spans, w.Spans())
	}
	if f.sum == 0 {
		t.Fatal("floor read nothing")
	}
}

// TestHoldersHoldEveryRequestUntilShutdown: floor_hold keeps each request decoded,
// floor_pack encoded (decoding back to every span), and shutdown lets both go.
func TestHoldersHoldEveryRequestUntilShutdown(t *testing.T) {
	w := newTestWorkload(t, WorkloadConfig{Seed: 2, Traces: 20, BatchSpans: 64})
	for _, pack := range []bool{false, true} {
		h := &holder{pack: pack}
		for i := range w.Len() {
			if err := h.ConsumeTraces(context.Background(), decode(t, w, i)); err != nil {
				t.Fatal(err)
			}
		}
		spans := 0
		for _, td := range h.decoded {
			spans += td.SpanCount()
		}
		var u ptrace.ProtoUnmarshaler
		for _, b := range h.encoded {
			td, err := u.UnmarshalTraces(b)
			if err != nil {
				t.Fatal(err)
			}
			spans += td.SpanCount()
		}
		if spans != w.Spans() || (len(h.encoded) > 0) != pack {
			t.Fatalf("pack %v: holds %d spans of %d (%d decoded, %d encoded requests)", pack, spans, w.Spans(), len(h.decoded), len(h.encoded))
		}
		if err := h.release(context.Background()); err != nil || h.decoded != nil || h.encoded != nil {
			t.Fatalf("pack %v: release kept what it held (%v)", pack, err)
		}
	}
}

func TestSinkRecordsFirstForwardPerTrace(t *testing.T) {
	w := newTestWorkload(t, WorkloadConfig{Seed: 2, Traces: 6})
	s := newSink(w, time.Now().Add(-time.Second))
	for i := range w.Len() {
		if err := s.ConsumeTraces(context.Background(), decode(t, w, i)); err != nil {
			t.Fatal(err)
		}
	}
	first := append([]time.Duration(nil), s.forwarded...)
	if err := s.ConsumeTraces(context.Background(), decode(t, w, 0)); err != nil {
		t.Fatal(err)
	}
	spans, traces := s.counts()
	if traces != w.Traces() || spans != int64(w.Spans()+w.BatchSpans(0)) {
		t.Fatalf("sink counted %d traces and %d spans", traces, spans)
	}
	for i, at := range s.forwarded {
		if at < time.Second || at != first[i] {
			t.Fatalf("trace %d: forwarded at %s, first seen at %s", i, at, first[i])
		}
	}
}
