package inbound

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestSpan(t *testing.T) {
	tests := []struct {
		name                string
		attrs               map[string]any
		spanName, eventName string
		wantAttrs           []string
		wantName, wantEvent string
		wantCounts          Counts
	}{
		{
			name:     "nothing under the namespace",
			attrs:    map[string]any{"gen_ai.tool.name": "x", "retrystorm": "no dot", "retrystormx.y": 1},
			spanName: "execute_tool x", eventName: "exception",
			wantAttrs: []string{"gen_ai.tool.name", "retrystorm", "retrystormx.y"},
			wantName:  "execute_tool x", wantEvent: "exception",
		},
		{
			name: "records and annotations removed, inputs kept",
			attrs: map[string]any{
				"retrystorm.call.summary": "{}", "retrystorm.finding.summary": "{}", "retrystorm.call.layer": "x",
				"retrystorm.made.up": true, "retrystorm.read.asset": "doc", "http.method": "GET",
			},
			spanName: "GET", eventName: "log",
			wantAttrs: []string{"retrystorm.read.asset", "http.method"},
			wantName:  "GET", wantEvent: "log",
			wantCounts: Counts{Span: 4, Event: 4, Link: 4},
		},
		{
			name:     "names under the namespace renamed",
			attrs:    map[string]any{},
			spanName: "retrystorm.late_finding", eventName: "retrystorm.finding",
			wantName: "client.retrystorm.late_finding", wantEvent: "client.retrystorm.finding",
			wantCounts: Counts{SpanName: 1, EventName: 1},
		},
	}
	f := New([]string{"retrystorm.read.asset", "gen_ai.tool.name"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			span := ptrace.NewSpan()
			span.SetName(tt.spanName)
			must(t, span.Attributes().FromRaw(tt.attrs))
			ev := span.Events().AppendEmpty()
			ev.SetName(tt.eventName)
			must(t, ev.Attributes().FromRaw(tt.attrs))
			must(t, span.Links().AppendEmpty().Attributes().FromRaw(tt.attrs))
			var c Counts
			f.Span(span, &c)
			if c != tt.wantCounts {
				t.Errorf("counts %+v, want %+v", c, tt.wantCounts)
			}
			if span.Name() != tt.wantName || ev.Name() != tt.wantEvent {
				t.Errorf("names %q, %q; want %q, %q", span.Name(), ev.Name(), tt.wantName, tt.wantEvent)
			}
			for _, m := range []pcommon.Map{span.Attributes(), ev.Attributes(), span.Links().At(0).Attributes()} {
				var keys []string
				for k := range m.All() {
					keys = append(keys, k)
				}
				if len(keys) != len(tt.wantAttrs) {
					t.Fatalf("attributes %v, want %v", keys, tt.wantAttrs)
				}
				for _, k := range tt.wantAttrs {
					if _, ok := m.Get(k); !ok {
						t.Errorf("attribute %s removed; left %v", k, keys)
					}
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestARepeatedKeyGoesEveryTime: OTLP maps off the wire may repeat a key; each copy goes.
func TestARepeatedKeyGoesEveryTime(t *testing.T) {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{
		"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"s","attributes":[
		{"key":"retrystorm.call.summary","value":{"stringValue":"a"}},
		{"key":"ok","value":{"stringValue":"b"}},
		{"key":"retrystorm.call.summary","value":{"stringValue":"c"}}]}]}]}]}`))
	must(t, err)
	span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	var c Counts
	New(nil).Span(span, &c)
	if c.Span != 2 || span.Attributes().Len() != 1 {
		t.Errorf("removed %d, left %d attributes; want 2 and 1", c.Span, span.Attributes().Len())
	}
}

// BenchmarkSpan is the cost of a span that carries nothing under the namespace, the usual
// case: an agent SDK's tool span with 16 attributes and an exception event.
func BenchmarkSpan(b *testing.B) {
	span := ptrace.NewSpan()
	span.SetName("execute_tool charge_card")
	for i := range 16 {
		span.Attributes().PutStr("gen_ai.attribute."+string(rune('a'+i)), "value")
	}
	ev := span.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.message", "boom")
	ev.Attributes().PutStr("exception.type", "Error")
	f := New([]string{"retrystorm.read.asset"})
	var c Counts
	b.ReportAllocs()
	for b.Loop() {
		f.Span(span, &c)
	}
}
