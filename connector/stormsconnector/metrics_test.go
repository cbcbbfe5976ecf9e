package stormsconnector

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// attemptSpan is the last attempt of a one-attempt call to tool, as retry_storm annotates
// (and seals) it.
func attemptSpan(spans ptrace.SpanSlice, tool, tracestate string) ptrace.Span {
	s := spans.AppendEmpty()
	s.SetTraceID([16]byte{9})
	s.TraceState().FromRaw(tracestate)
	a := s.Attributes()
	a.PutStr(stormrecord.AttrCallTool, tool)
	a.PutInt(stormrecord.AttrCallAttempt, 1)
	a.PutInt(stormrecord.AttrCallAttempts, 1)
	a.PutStr(stormrecord.AttrCallLayer, string(stormrecord.LayerInitial))
	a.PutStr(stormrecord.AttrStatus, "ok")
	stormrecord.Seal(s)
	return s
}

func consumeMetrics(t *testing.T, cfg *Config, td ptrace.Traces) map[string]map[string]float64 {
	t.Helper()
	sink := new(consumertest.MetricsSink)
	c, err := NewFactory().CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(NewFactory().Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), nil))
	require.NoError(t, c.ConsumeTraces(context.Background(), td))
	require.NoError(t, c.Shutdown(context.Background()))
	return pipeline{metrics: sink}.last(t)
}

func TestToolNamesAreBoundedAndSampledSpansWeighted(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	attemptSpan(spans, "a", "")
	attemptSpan(spans, "b", "ot=th:c") // kept with probability 1/4: stands for 4
	attemptSpan(spans, "c", "ot=th:8") // 1/2: stands for 2
	attemptSpan(spans, "a", "ot=th:0") // kept always
	attemptSpan(spans, "", "")         // no tool name
	cfg := createDefaultConfig()
	cfg.Metrics.MaxTools = 2
	got := consumeMetrics(t, cfg, td)["retrystorm.calls"]
	require.Equal(t, map[string]float64{`{"tool":"a"}`: 2, `{"tool":"b"}`: 4, `{"tool":"_other"}`: 2, `{"tool":"_unknown"}`: 1}, got)
}

func TestALateFindingCountsOnlyItsFinding(t *testing.T) {
	storm := "transient_dependency"
	record, err := json.Marshal(stormrecord.Record{Schema: stormrecord.Schema, CallKey: "c1", ToolName: "lookup", Storm: true, Class: &storm, Layer: stormrecord.LayerExecutor,
		Attempts: 2, Statuses: []string{"error", "ok"}, Revision: 2,
		Findings: []stormrecord.Finding{{Kind: "result_drift"}, {Kind: "stale_cache_suspect"}}})
	require.NoError(t, err)
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName(stormrecord.LateFindingSpan)
	span.Attributes().PutStr(stormrecord.AttrCallSummary, string(record))
	ev := span.Events().AppendEmpty()
	ev.SetName(stormrecord.FindingEvent)
	ev.Attributes().PutStr(stormrecord.FindingKind, "stale_cache_suspect")
	stormrecord.Seal(span)
	got := consumeMetrics(t, createDefaultConfig(), td)
	require.Equal(t, map[string]float64{`{"kind":"stale_cache_suspect","tool":"lookup"}`: 1}, got["retrystorm.findings"])
	require.NotContains(t, got, "retrystorm.storms", "the storm was counted with its trace")
}
