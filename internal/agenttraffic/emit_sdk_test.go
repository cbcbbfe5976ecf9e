package agenttraffic

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestReplayKeepsThePlan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := NewTracerProvider("checkout-agent", sdktrace.WithSyncer(exp))
	traces := generate(t, Config{Seed: 31, EveryScenario: true}, 16)
	for i := range traces {
		if err := Replay(context.Background(), tp, &traces[i]); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	// Read before Shutdown: shutting the in-memory exporter down forgets its spans.
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	got := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		got[s.SpanContext.SpanID()] = s
	}
	if len(got) != spanTotal(traces) {
		t.Fatalf("exported %d spans, want %d", len(got), spanTotal(traces))
	}
	for i := range traces {
		for j := range traces[i].Spans {
			checkReplayedSpan(t, &traces[i], &traces[i].Spans[j], got[trace.SpanID(traces[i].Spans[j].ID)])
		}
	}
}

func checkReplayedSpan(t *testing.T, tr *Trace, want *Span, got tracetest.SpanStub) {
	t.Helper()
	if got.SpanContext.TraceID() != trace.TraceID(tr.ID) || got.Parent.SpanID() != trace.SpanID(want.Parent) {
		t.Fatalf("span %q: trace %s parent %s", want.Name, got.SpanContext.TraceID(), got.Parent.SpanID())
	}
	if got.Name != want.Name || !got.StartTime.Equal(want.Start) || !got.EndTime.Equal(want.End) {
		t.Errorf("span %q: name %q or times differ", want.Name, got.Name)
	}
	if got.InstrumentationScope.Name != tr.Scope || sdkKind(want.Kind) != got.SpanKind {
		t.Errorf("span %q: scope %q kind %v", want.Name, got.InstrumentationScope.Name, got.SpanKind)
	}
	wantCode := map[StatusCode]codes.Code{StatusUnset: codes.Unset, StatusOK: codes.Ok, StatusError: codes.Error}[want.Status.Code]
	if got.Status.Code != wantCode || got.Status.Description != want.Status.Message {
		t.Errorf("span %q: status %v, want %v", want.Name, got.Status, want.Status)
	}
	attrs := attribute.NewSet(got.Attributes...)
	if attrs.Len() != len(want.Attrs) {
		t.Errorf("span %q: %d attributes, want %d", want.Name, attrs.Len(), len(want.Attrs))
	}
	for _, a := range want.Attrs {
		v, ok := attrs.Value(attribute.Key(a.Key))
		if !ok || !sdkValueEqual(v, a.Value) {
			t.Errorf("span %q: attribute %s = %v, want %s", want.Name, a.Key, v.Emit(), a.Value.JSON())
		}
	}
	if len(got.Events) != len(want.Events) {
		t.Fatalf("span %q: %d events, want %d", want.Name, len(got.Events), len(want.Events))
	}
	for k, e := range want.Events {
		ev := got.Events[k]
		evAttrs := attribute.NewSet(ev.Attributes...)
		if ev.Name != e.Name || !ev.Time.Equal(e.Time) || evAttrs.Len() != len(e.Attrs) {
			t.Errorf("span %q: event %d is %q at %v with %d attributes, want %q at %v with %d", want.Name, k,
				ev.Name, ev.Time, evAttrs.Len(), e.Name, e.Time, len(e.Attrs))
		}
		for _, a := range e.Attrs {
			if v, ok := evAttrs.Value(attribute.Key(a.Key)); !ok || !sdkValueEqual(v, a.Value) {
				t.Errorf("span %q: event %s attribute %s = %v, want %s", want.Name, e.Name, a.Key, v.Emit(), a.Value.JSON())
			}
		}
	}
	if svc, _ := got.Resource.Set().Value("service.name"); svc.AsString() != "checkout-agent" {
		t.Errorf("service.name %q", svc.AsString())
	}
}

func sdkValueEqual(v attribute.Value, want Value) bool {
	switch want.Kind {
	case ValueString:
		return v.AsString() == want.Str
	case ValueInt:
		return v.AsInt64() == want.Int
	case ValueFloat:
		return v.AsFloat64() == want.Float
	case ValueBool:
		return v.AsBool() == want.Bool
	case ValueStrings:
		return len(v.AsStringSlice()) == len(want.Strs)
	case ValueMap:
		return v.Type() == attribute.STRING && v.AsString() == want.JSON()
	}
	return false
}

// TestReplayConcurrently shares one provider between goroutines: the planned ids travel in
// each Start's context, so no replay can take another's ids.
func TestReplayConcurrently(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := NewTracerProvider("checkout-agent", sdktrace.WithSyncer(exp))
	traces := generate(t, Config{Seed: 32}, 40)
	var wg sync.WaitGroup
	errs := make(chan error, len(traces))
	for i := range traces {
		wg.Go(func() { errs <- Replay(context.Background(), tp, &traces[i]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	planned := map[trace.SpanID]TraceID{}
	for _, tr := range traces {
		for _, s := range tr.Spans {
			planned[trace.SpanID(s.ID)] = tr.ID
		}
	}
	spans := exp.GetSpans()
	if len(spans) != len(planned) {
		t.Fatalf("exported %d spans, want %d", len(spans), len(planned))
	}
	for _, s := range spans {
		if tid, ok := planned[s.SpanContext.SpanID()]; !ok || trace.TraceID(tid) != s.SpanContext.TraceID() {
			t.Fatalf("span %s replayed into trace %s", s.SpanContext.SpanID(), s.SpanContext.TraceID())
		}
	}
}

func TestReplayNeedsPlannedIDs(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	traces := generate(t, Config{Seed: 33}, 1)
	if err := Replay(context.Background(), tp, &traces[0]); !errors.Is(err, errUnplannedIDs) {
		t.Fatalf("replay through a random-id provider: %v, want errUnplannedIDs", err)
	}
}
