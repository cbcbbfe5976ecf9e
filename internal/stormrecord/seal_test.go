package stormrecord

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// annotated is a last attempt as the processor leaves it, its record and a finding event.
func annotated() ptrace.Span {
	span := ptrace.NewSpan()
	span.SetTraceID(pcommon.TraceID{1, 2, 3})
	span.SetSpanID(pcommon.SpanID{4, 5})
	span.SetName("execute_tool charge_card")
	a := span.Attributes()
	a.PutStr("gen_ai.tool.name", "charge_card")
	a.PutStr(AttrCallKey, "call-1")
	a.PutInt(AttrCallAttempt, 2)
	a.PutInt(AttrCallAttempts, 2)
	a.PutBool(AttrCallStorm, true)
	a.PutStr(AttrCallSummary, `{"schema":"retrystorm.storm/v1","call_key":"call-1"}`)
	ev := span.Events().AppendEmpty()
	ev.SetName(FindingEvent)
	ev.Attributes().PutStr(FindingKind, "result_drift")
	return span
}

// TestASealHoldsWhatReadersRead: a sealed span checks; changing anything a reader reads
// of it, or moving the seal to another span, breaks the seal; what readers do not read may
// change; a span with nothing readers read needs none.
func TestASealHoldsWhatReadersRead(t *testing.T) {
	s := NewSealer()
	span := annotated()
	if !s.Seal(span) {
		t.Fatal("an annotated span was not sealed")
	}
	if got := s.Check(span); got != Sealed {
		t.Fatalf("a sealed span checks %v", got)
	}
	breaks := map[string]func(ptrace.Span){
		"the record": func(sp ptrace.Span) {
			sp.Attributes().PutStr(AttrCallSummary, `{"schema":"retrystorm.storm/v1","call_key":"call-2"}`)
		},
		"an int annotation":     func(sp ptrace.Span) { sp.Attributes().PutInt(AttrCallAttempts, 3) },
		"its type":              func(sp ptrace.Span) { sp.Attributes().PutStr(AttrCallAttempt, "2") },
		"a removed annotation":  func(sp ptrace.Span) { sp.Attributes().Remove(AttrCallStorm) },
		"an added annotation":   func(sp ptrace.Span) { sp.Attributes().PutStr(AttrCallLayer, "executor") },
		"the span id":           func(sp ptrace.Span) { sp.SetSpanID(pcommon.SpanID{4, 6}) },
		"the trace id":          func(sp ptrace.Span) { sp.SetTraceID(pcommon.TraceID{1, 2, 4}) },
		"a late-finding name":   func(sp ptrace.Span) { sp.SetName(LateFindingSpan) },
		"a finding event added": func(sp ptrace.Span) { sp.Events().AppendEmpty().SetName(FindingEvent) },
		"a finding's kind":      func(sp ptrace.Span) { sp.Events().At(0).Attributes().PutStr(FindingKind, "duplicate_side_effect") },
		"the seal":              func(sp ptrace.Span) { sp.Attributes().PutStr(AttrSeal, "00112233445566778899aabbccddeeff") },
		"a seal not hex":        func(sp ptrace.Span) { sp.Attributes().PutStr(AttrSeal, "forged") },
		"no seal":               func(sp ptrace.Span) { sp.Attributes().Remove(AttrSeal) },
	}
	for name, change := range breaks {
		sp := ptrace.NewSpan()
		span.CopyTo(sp)
		change(sp)
		if got := s.Check(sp); got != Unsealed {
			t.Errorf("%s changed: checks %v, want Unsealed", name, got)
		}
	}
	keeps := map[string]func(ptrace.Span){
		"another attribute": func(sp ptrace.Span) { sp.Attributes().PutStr("http.method", "POST") },
		"the span name":     func(sp ptrace.Span) { sp.SetName("charge_card") },
		"another event":     func(sp ptrace.Span) { sp.Events().AppendEmpty().SetName("exception") },
		"a finding detail":  func(sp ptrace.Span) { sp.Events().At(0).Attributes().PutStr(FindingDetail, "[redacted]") },
		"the tracestate":    func(sp ptrace.Span) { sp.TraceState().FromRaw("ot=th:8") },
	}
	for name, change := range keeps {
		sp := ptrace.NewSpan()
		span.CopyTo(sp)
		change(sp)
		if got := s.Check(sp); got != Sealed {
			t.Errorf("%s changed: checks %v, want Sealed", name, got)
		}
	}
	plain := ptrace.NewSpan()
	plain.Attributes().PutStr("retrystorm.read.asset", "doc")
	if s.Seal(plain) || s.Check(plain) != Unannotated {
		t.Error("a span without annotations readers read was sealed or checked as annotated")
	}
	if _, ok := plain.Attributes().Get(AttrSeal); ok {
		t.Error("a span without annotations carries a seal")
	}
}

func TestASealedLateFindingSpanNeedsNoAttributeToBeChecked(t *testing.T) {
	span := ptrace.NewSpan()
	span.SetName(LateFindingSpan)
	if NewSealer().Check(span) != Unsealed {
		t.Error("an unsealed late-finding span was not found unsealed")
	}
	Seal(span)
	if NewSealer().Check(span) != Sealed {
		t.Error("a sealed late-finding span does not check")
	}
}

func BenchmarkSealAnAttempt(b *testing.B) {
	s := NewSealer()
	span := annotated()
	b.ReportAllocs()
	for b.Loop() {
		s.Seal(span)
	}
}
