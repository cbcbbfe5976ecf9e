package stormsconnector

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

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

// TestNewSeriesStartAtZero: a series is emitted at 0 from its first emission until
// new_series_hold has passed, then at its sum, so a Prometheus scrape sees it grow from 0;
// the emission at shutdown holds every sum.
func TestNewSeriesStartAtZero(t *testing.T) {
	cfg := createDefaultConfig().Metrics
	cfg.NewSeriesHold = 10 * time.Second
	m := newStormMetrics(cfg, consumertest.NewNop(), zap.NewNop(), func(context.Context, int64) {}, &sealCheck{accept: true})
	calls := func(at time.Time, final bool) map[string]float64 {
		out := map[string]float64{}
		ms := m.snapshot(at, final).ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := 0; i < ms.Len(); i++ {
			if ms.At(i).Name() != "retrystorm.calls" {
				continue
			}
			dps := ms.At(i).Sum().DataPoints()
			for j := 0; j < dps.Len(); j++ {
				tool, _ := dps.At(j).Attributes().Get("tool")
				out[tool.Str()] = dps.At(j).DoubleValue()
			}
		}
		return out
	}
	consume := func(tools ...string) {
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for _, tool := range tools {
			attemptSpan(spans, tool, "")
		}
		require.NoError(t, m.ConsumeTraces(context.Background(), td))
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	consume("a", "a", "a")
	require.Equal(t, map[string]float64{"a": 0}, calls(t0, false), "first emission")
	require.Equal(t, map[string]float64{"a": 0}, calls(t0.Add(9*time.Second), false), "within the hold")
	consume("b")
	require.Equal(t, map[string]float64{"a": 3, "b": 0}, calls(t0.Add(10*time.Second), false), "a released, b new")
	consume("a", "b")
	require.Equal(t, map[string]float64{"a": 4, "b": 0}, calls(t0.Add(15*time.Second), false), "a counts at once, b held from its own first emission")
	require.Equal(t, map[string]float64{"a": 4, "b": 2}, calls(t0.Add(20*time.Second), false))
	consume("c")
	require.Equal(t, map[string]float64{"a": 4, "b": 2, "c": 1}, calls(t0.Add(21*time.Second), true), "the last emission, at shutdown, holds every sum")
}
