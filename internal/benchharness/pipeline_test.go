package benchharness

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// samplingReason is the root annotation retry_storm writes on every trace it gives the
// verdict (the processor README, "Annotations on kept spans").
const samplingReason = "retrystorm.sampling.reason"

// runVariant builds variant over sink, starts it, feeds it every request of w and shuts it
// down, which decides whatever is still held: the sink then holds every decision.
func runVariant(t *testing.T, variant string, w *Workload, sink consumer.Traces) {
	t.Helper()
	ctx := context.Background()
	sub, err := newSubject(ctx, variant, sink, "")
	if err != nil {
		t.Fatalf("%s: %v", variant, err)
	}
	if err := sub.start(ctx); err != nil {
		t.Fatalf("%s: start: %v", variant, err)
	}
	for i := range w.Len() {
		if err := sub.consumer.ConsumeTraces(ctx, decode(t, w, i)); err != nil {
			t.Fatalf("%s: consume request %d: %v", variant, i, err)
		}
	}
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sub.shutdown(stopCtx); err != nil {
		t.Fatalf("%s: shutdown: %v", variant, err)
	}
}

// lateFinding is the span retry_storm adds to a trace already forwarded when a stale-cache
// suspect of it is confirmed later (the processor README, "Divergence and completeness"):
// not one of the workload's spans.
const lateFinding = "retrystorm.late_finding"

// keptTraces counts the workload's spans forwarded per trace and reads each trace's
// sampling reason.
func keptTraces(sink *consumertest.TracesSink) (spans map[pcommon.TraceID]int, reasons map[pcommon.TraceID]string) {
	spans, reasons = map[pcommon.TraceID]int{}, map[pcommon.TraceID]string{}
	for _, td := range sink.AllTraces() {
		for _, span := range tracespans.All(td) {
			if span.Name() == lateFinding {
				continue
			}
			spans[span.TraceID()]++
			if v, ok := span.Attributes().Get(samplingReason); ok {
				reasons[span.TraceID()] = v.Str()
			}
		}
	}
	return spans, reasons
}

// TestTailSamplingStacksForwardWhatTheyKeep: each tail_sampling stack builds, starts,
// forwards whole the traces it keeps, some and not all, and shuts down without leaving a
// goroutine behind. The retry_storm stack keeps every trace retry_storm alone keeps for a
// signal, and gives each trace it forwards the verdict: the peer keeps what retry_storm
// keeps.
func TestTailSamplingStacksForwardWhatTheyKeep(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	w := newTestWorkload(t, WorkloadConfig{Seed: 3, Traces: 200, BatchSpans: 512})

	alone := &consumertest.TracesSink{}
	runVariant(t, VariantRetryStorm, w, alone)
	_, aloneReasons := keptTraces(alone)
	signals := 0
	for _, reason := range aloneReasons {
		if reason != "clean" {
			signals++
		}
	}
	if signals == 0 {
		t.Fatal("retry_storm kept no trace for a signal: the workload tests nothing")
	}

	for _, v := range []string{VariantTailSamplingRetryStorm, VariantTailSamplingRedaction} {
		t.Run(v, func(t *testing.T) {
			sink := &consumertest.TracesSink{}
			runVariant(t, v, w, sink)
			spans, reasons := keptTraces(sink)
			if len(spans) == 0 || len(spans) >= w.Traces() {
				t.Fatalf("kept %d traces of %d", len(spans), w.Traces())
			}
			for id, n := range spans {
				i, ok := w.trace(id)
				if !ok {
					t.Fatalf("forwarded trace %s is not the workload's", id)
				}
				if want := w.traces[i].spans; n != want {
					t.Errorf("trace %s forwarded with %d spans of %d", id, n, want)
				}
			}
			if v != VariantTailSamplingRetryStorm {
				return
			}
			for id := range spans {
				if _, ok := reasons[id]; !ok {
					t.Errorf("trace %s forwarded without retry_storm's verdict", id)
				}
			}
			for id, reason := range aloneReasons {
				if _, ok := spans[id]; reason != "clean" && !ok {
					t.Errorf("trace %s, kept by retry_storm for %s, was dropped", id, reason)
				}
			}
		})
	}
}

// TestTailSamplingRedactionMasksWhatItBlocks: the contrib peer is a real peer. A card number,
// an e-mail address and an IBAN in a kept span are masked by the redaction processor, while
// tail_sampling alone forwards them as they came.
func TestTailSamplingRedactionMasksWhatItBlocks(t *testing.T) {
	secrets := map[string]string{
		"payment.card":     "4111111111111111",
		"customer.email":   "ana.meyer1234@example.com",
		"customer.account": "DE89 3704 0044 0532 0130 00",
	}
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetTraceID(pcommon.TraceID{0xca, 0x4d, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	span.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	span.SetName("charge_card")
	span.Status().SetCode(ptrace.StatusCodeError) // kept by the errors policy
	for k, v := range secrets {
		span.Attributes().PutStr(k, "value: "+v)
	}
	span.Attributes().PutStr("tool.name", "charge_card")

	for _, v := range []string{VariantTailSampling, VariantTailSamplingRedaction} {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			sink := &consumertest.TracesSink{}
			sub, err := newSubject(ctx, v, sink, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := sub.start(ctx); err != nil {
				t.Fatal(err)
			}
			in := ptrace.NewTraces()
			td.CopyTo(in)
			if err := sub.consumer.ConsumeTraces(ctx, in); err != nil {
				t.Fatal(err)
			}
			if err := sub.shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if sink.SpanCount() != 1 {
				t.Fatalf("forwarded %d spans, want the error span", sink.SpanCount())
			}
			attrs := sink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
			for k, secret := range secrets {
				got, _ := attrs.Get(k)
				leaked := strings.Contains(got.Str(), secret)
				if masked := v == VariantTailSamplingRedaction; masked == leaked {
					t.Errorf("%s = %q (masked expected: %v)", k, got.Str(), masked)
				}
			}
			if got, _ := attrs.Get("tool.name"); got.Str() != "charge_card" {
				t.Errorf("tool.name = %q: an attribute with nothing blocked changed", got.Str())
			}
		})
	}
}
