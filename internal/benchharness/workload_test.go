package benchharness

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

func newTestWorkload(t *testing.T, cfg WorkloadConfig) *Workload {
	t.Helper()
	w, err := NewWorkload(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

func decode(t *testing.T, w *Workload, i int) ptrace.Traces {
	t.Helper()
	td, err := w.Batch(i)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

func TestWorkloadBatchesLikeAnSDK(t *testing.T) {
	w := newTestWorkload(t, WorkloadConfig{Seed: 3, Traces: 40, BatchSpans: 100})
	total := 0
	lastSpan := map[pcommon.TraceID]int{}
	ended := map[pcommon.SpanID]bool{}
	for i := range w.Len() {
		td := decode(t, w, i)
		if got := td.SpanCount(); got != w.BatchSpans(i) || got > 100 || got == 0 {
			t.Fatalf("request %d: %d spans, recorded %d", i, got, w.BatchSpans(i))
		}
		total += td.SpanCount()
		if td.ResourceSpans().Len() != 1 {
			t.Fatalf("request %d: %d resources, want one as an SDK sends", i, td.ResourceSpans().Len())
		}
		sss := td.ResourceSpans().At(0).ScopeSpans()
		names := map[string]bool{}
		for j := 0; j < sss.Len(); j++ {
			name := sss.At(j).Scope().Name()
			if names[name] {
				t.Fatalf("request %d: scope %q twice", i, name)
			}
			names[name] = true
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				lastSpan[s.TraceID()] = i
				if ended[s.ParentSpanID()] {
					t.Fatalf("request %d: span %s comes after its parent", i, s.SpanID())
				}
				ended[s.SpanID()] = true
			}
		}
	}
	if total != w.Spans() {
		t.Fatalf("requests hold %d spans, workload says %d", total, w.Spans())
	}
	if len(lastSpan) != w.Traces() {
		t.Fatalf("%d traces in the requests, workload says %d", len(lastSpan), w.Traces())
	}
	for id, batch := range lastSpan {
		i, ok := w.trace(id)
		if !ok || w.traces[i].lastBatch != batch {
			t.Fatalf("trace %s: last span in request %d, recorded %d", id, batch, w.traces[i].lastBatch)
		}
	}
}

func TestWorkloadRootLast(t *testing.T) {
	w := newTestWorkload(t, WorkloadConfig{Seed: 5, Traces: 10})
	if w.Len() != w.Traces() {
		t.Fatalf("one trace per request: %d requests for %d traces", w.Len(), w.Traces())
	}
	for i := range w.Len() {
		spans := decode(t, w, i).ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		last := spans.At(spans.Len() - 1)
		if !last.ParentSpanID().IsEmpty() {
			t.Fatalf("request %d: the last span is not the root", i)
		}
		for k := 0; k < spans.Len()-1; k++ {
			if spans.At(k).ParentSpanID().IsEmpty() {
				t.Fatalf("request %d: a root before the end", i)
			}
		}
	}
}

func TestWorkloadRootless(t *testing.T) {
	full := newTestWorkload(t, WorkloadConfig{Seed: 5, Traces: 10})
	w := newTestWorkload(t, WorkloadConfig{Seed: 5, Traces: 10, Rootless: true})
	if w.Spans() != full.Spans()-full.Traces() {
		t.Fatalf("rootless: %d spans, want %d less one root per trace", w.Spans(), full.Spans())
	}
	for i := range w.Len() {
		td := decode(t, w, i)
		spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			if spans.At(k).ParentSpanID().IsEmpty() {
				t.Fatalf("request %d holds a root", i)
			}
		}
	}
}

func TestWorkloadIsRealisticMix(t *testing.T) {
	w := newTestWorkload(t, WorkloadConfig{Seed: 1, Traces: 400, BatchSpans: 512})
	perTrace := float64(w.Spans()) / float64(w.Traces())
	if perTrace < 45 || perTrace > 75 {
		t.Fatalf("%.1f spans per trace, want about 60", perTrace)
	}
	withError, payloads := 0, 0
	errTraces := map[pcommon.TraceID]bool{}
	for i := range w.Len() {
		td := decode(t, w, i)
		for _, s := range tracespans.All(td) {
			if s.Status().Code() == ptrace.StatusCodeError {
				errTraces[s.TraceID()] = true
			}
			for _, k := range []string{"gen_ai.tool.call.arguments", "input.value", "traceloop.entity.input", "request", "tool_input"} {
				if _, ok := s.Attributes().Get(k); ok {
					payloads++
				}
			}
		}
	}
	withError = len(errTraces)
	if share := float64(withError) / float64(w.Traces()); share < 0.02 || share > 0.2 {
		t.Fatalf("%.1f%% of traces hold an error span, want a few percent", 100*share)
	}
	if payloads < w.Traces() {
		t.Fatalf("%d payload attributes in %d traces", payloads, w.Traces())
	}
}
