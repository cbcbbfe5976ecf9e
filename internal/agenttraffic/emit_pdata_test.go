package agenttraffic

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestToPdataKeepsThePlan(t *testing.T) {
	traces := generate(t, Config{Seed: 21, EveryScenario: true}, 16)
	td := ToPdata(traces)
	if td.ResourceSpans().Len() != len(traces) || td.SpanCount() != spanTotal(traces) {
		t.Fatalf("%d resource spans, %d spans; want %d, %d", td.ResourceSpans().Len(), td.SpanCount(),
			len(traces), spanTotal(traces))
	}
	for i := range traces {
		rs := td.ResourceSpans().At(i)
		if svc, _ := rs.Resource().Attributes().Get("service.name"); svc.Str() != traces[i].Service {
			t.Errorf("service.name %q", svc.Str())
		}
		if rs.ScopeSpans().At(0).Scope().Name() != traces[i].Scope {
			t.Errorf("scope %q, want %q", rs.ScopeSpans().At(0).Scope().Name(), traces[i].Scope)
		}
		checkPdataSpans(t, &traces[i], rs.ScopeSpans().At(0).Spans())
	}
}

func spanTotal(traces []Trace) int {
	n := 0
	for _, tr := range traces {
		n += len(tr.Spans)
	}
	return n
}

func checkPdataSpans(t *testing.T, tr *Trace, spans ptrace.SpanSlice) {
	t.Helper()
	ids := map[pcommon.SpanID]bool{}
	for j := 0; j < spans.Len(); j++ {
		ids[spans.At(j).SpanID()] = true
	}
	for j := 0; j < spans.Len(); j++ {
		got, want := spans.At(j), &tr.Spans[j]
		if got.TraceID() != pcommon.TraceID(tr.ID) || got.SpanID() != pcommon.SpanID(want.ID) {
			t.Fatalf("span %q: ids %s/%s", want.Name, got.TraceID(), got.SpanID())
		}
		if !got.ParentSpanID().IsEmpty() && !ids[got.ParentSpanID()] {
			t.Errorf("span %q: parent %s missing", want.Name, got.ParentSpanID())
		}
		if got.ParentSpanID() != pcommon.SpanID(want.Parent) || got.Name() != want.Name {
			t.Errorf("span %q: parent or name differ", want.Name)
		}
		if !got.StartTimestamp().AsTime().Equal(want.Start) || !got.EndTimestamp().AsTime().Equal(want.End) {
			t.Errorf("span %q: times differ", want.Name)
		}
		if int(got.Status().Code()) != int(want.Status.Code) || got.Status().Message() != want.Status.Message {
			t.Errorf("span %q: status %v, want %v", want.Name, got.Status().Code(), want.Status)
		}
		if got.Attributes().Len() != len(want.Attrs) {
			t.Errorf("span %q: %d attributes, want %d", want.Name, got.Attributes().Len(), len(want.Attrs))
		}
		for _, a := range want.Attrs {
			v, ok := got.Attributes().Get(a.Key)
			if !ok || !pdataValueEqual(v, a.Value) {
				t.Errorf("span %q: attribute %s = %v, want %v", want.Name, a.Key, v.AsRaw(), a.Value.JSON())
			}
		}
		if got.Events().Len() != len(want.Events) {
			t.Fatalf("span %q: %d events, want %d", want.Name, got.Events().Len(), len(want.Events))
		}
		for k, e := range want.Events {
			ev := got.Events().At(k)
			if ev.Name() != e.Name || !ev.Timestamp().AsTime().Equal(e.Time) || ev.Attributes().Len() != len(e.Attrs) {
				t.Errorf("span %q: event %d is %q at %v with %d attributes, want %q at %v with %d", want.Name, k,
					ev.Name(), ev.Timestamp().AsTime(), ev.Attributes().Len(), e.Name, e.Time, len(e.Attrs))
			}
			for _, a := range e.Attrs {
				if v, ok := ev.Attributes().Get(a.Key); !ok || !pdataValueEqual(v, a.Value) {
					t.Errorf("span %q: event %s attribute %s = %v, want %v", want.Name, e.Name, a.Key, v.AsRaw(), a.Value.JSON())
				}
			}
		}
	}
}

func pdataValueEqual(v pcommon.Value, want Value) bool {
	switch want.Kind {
	case ValueString:
		return v.Type() == pcommon.ValueTypeStr && v.Str() == want.Str
	case ValueInt:
		return v.Type() == pcommon.ValueTypeInt && v.Int() == want.Int
	case ValueFloat:
		return v.Type() == pcommon.ValueTypeDouble && v.Double() == want.Float
	case ValueBool:
		return v.Type() == pcommon.ValueTypeBool && v.Bool() == want.Bool
	case ValueStrings:
		return v.Type() == pcommon.ValueTypeSlice && v.Slice().Len() == len(want.Strs)
	case ValueMap:
		return v.Type() == pcommon.ValueTypeMap && v.Map().Len() == len(want.Map)
	}
	return false
}

func TestToPdataWritesMapsAsMaps(t *testing.T) {
	traces := generate(t, Config{Seed: 4, Shapes: []Shape{ShapeMastra}, Scenarios: ScenarioWeights{ScenarioClean: 1}}, 1)
	td := TraceToPdata(&traces[0])
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	maps := 0
	for i := 0; i < spans.Len(); i++ {
		if v, ok := spans.At(i).Attributes().Get("gen_ai.tool.call.arguments"); ok && v.Type() == pcommon.ValueTypeMap {
			maps++
		}
	}
	if maps != traces[0].Truth.ToolAttempts {
		t.Errorf("%d map-valued arguments, want one per attempt (%d)", maps, traces[0].Truth.ToolAttempts)
	}
}
