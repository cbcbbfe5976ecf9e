package benchharness

import (
	"context"
	"testing"
	"time"
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
