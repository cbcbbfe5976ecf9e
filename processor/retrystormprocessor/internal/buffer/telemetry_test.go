package buffer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// mcpErrorTrace is an MCP tools/call span without a call id whose result says isError while
// the span status is unset.
func mcpErrorTrace(id pcommon.TraceID) ptrace.Traces {
	b := buffertest.NewSpanBuilder(id)
	root := b.Root()
	b.Span("tools/call search", root.SpanID(), 100, 300, map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "search",
		"gen_ai.tool.call.result": `{"isError": true, "content": [{"type": "text", "text": "index offline"}]}`,
	})
	return b.Traces
}

// namelessToolTrace has a tool span that carries no tool name: an incomplete record.
func namelessToolTrace(id pcommon.TraceID) ptrace.Traces {
	b := buffertest.NewSpanBuilder(id)
	root := b.Root()
	b.Span("execute_tool", root.SpanID(), 100, 300, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "c1",
	})
	return b.Traces
}

func TestTelemetry(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	h.Consume(buffertest.StormTrace(buffertest.TraceID(1)))
	h.Consume(mcpErrorTrace(buffertest.TraceID(2)))
	h.Consume(namelessToolTrace(buffertest.TraceID(3)))
	h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(4), "lookup")))
	h.Advance(2 * time.Second)

	assert.EqualValues(t, 3+1+1, h.Sum(metadata.MetricToolAttempts), "decided traces only")
	assert.EqualValues(t, 3, h.Sum(metadata.MetricCalls))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricDegradedCalls), "the MCP call has no call id")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricIncompleteAttempts))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricStormCalls, attribute.String("class", "transient_dependency"), attribute.String("tool", "charge_card")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricStatusFlipCalls))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricFindings, attribute.String("kind", "incomplete_record")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricStatusRemapped))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("reason", "incomplete")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricTraces, attribute.String("reason", "tool_error")))
	assert.EqualValues(t, 3, h.Sum(metadata.MetricTraces, attribute.String("decision", "kept")))
	assert.EqualValues(t, 1, h.Sum(metadata.MetricBufferedTraces), "the rootless clean trace waits")
	assert.EqualValues(t, 1, h.Sum(metadata.MetricBufferedSpans))
	assert.Equal(t, pieceSize(buffertest.WithoutRoot(buffertest.CleanTrace(buffertest.TraceID(4), "lookup"))), h.Sum(metadata.MetricBufferedBytes))
	h.Conservation()

	remapped := buffertest.SinkSpans(h.Sink)[buffertest.TraceID(2)]
	for _, s := range remapped {
		if s.Name() == "tools/call search" {
			assert.Equal(t, ptrace.StatusCodeError, s.Status().Code(), "isError remaps the status")
			assert.Equal(t, true, s.Attributes().AsRaw()[stormrecord.AttrStatusRemap])
		}
	}

	h.Advance(30 * time.Second)
	latency, err := h.Tel.GetMetric(metadata.MetricDecisionLatency)
	require.NoError(t, err)
	hist := latency.Data.(metricdata.Histogram[float64]).DataPoints[0]
	assert.EqualValues(t, 4, hist.Count)
	assert.InDelta(t, 3*2+32, hist.Sum, 1e-9, "three traces after root_grace, the rootless one when the clock passed decision_wait")
	h.Conservation()
}

func TestEveryDesignMetricIsExported(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	h.Consume(buffertest.StormTrace(buffertest.TraceID(1)))
	h.Consume(buffertest.CleanTrace(buffertest.TraceID(2), "lookup"))
	h.Advance(2 * time.Second)
	h.Consume(buffertest.StormTrace(buffertest.TraceID(1)))
	for _, name := range []string{
		metadata.MetricSpansReceived, metadata.MetricSpansForwarded, metadata.MetricSpansDropped,
		metadata.MetricToolAttempts, metadata.MetricCalls, metadata.MetricStormCalls,
		metadata.MetricStatusFlipCalls, metadata.MetricTraces, metadata.MetricLateSpans,
		metadata.MetricBufferedBytes, metadata.MetricBufferedTraces, metadata.MetricBufferedSpans,
		metadata.MetricDecisionLatency,
	} {
		_, err := h.Tel.GetMetric(name)
		assert.NoError(t, err)
	}
}

func TestToolNamesAreBounded(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	for i := range 150 {
		b := buffertest.NewSpanBuilder(buffertest.TraceID(uint64(i)))
		root := b.Root()
		for a := range 2 {
			b.Tool(root.SpanID(), fmt.Sprintf("tool_%03d", i), "call-1", int64(100+a*300), a == 0)
		}
		h.Consume(b.Traces)
	}
	h.Advance(2 * time.Second)
	tools := func() map[string]int64 {
		m, err := h.Tel.GetMetric(metadata.MetricStormCalls)
		require.NoError(t, err)
		out := map[string]int64{}
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			v, _ := dp.Attributes.Value("tool")
			out[v.AsString()] += dp.Value
		}
		return out
	}
	require.EqualValues(t, 0, tools()[verdict.ToolOther], "the first collection sees every series at 0")
	got := tools()
	assert.Len(t, got, verdict.MaxToolNames+1)
	assert.EqualValues(t, 50, got[verdict.ToolOther])
}

// TestCountersStartAtZero: before any span, every counter is exported with each series of
// its known attribute values at 0 (README, "Series that start at zero"); storm_calls, per
// tool, has none until a storm.
func TestCountersStartAtZero(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.Tel.Reader.Collect(t.Context(), &rm))
	got := map[string]int{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				assert.Zero(t, dp.Value, "%s %v", m.Name, dp.Attributes.ToSlice())
			}
			got[m.Name] = len(sum.DataPoints)
		}
	}
	assert.Equal(t, map[string]int{
		metadata.MetricSpansReceived: 1, metadata.MetricSpansForwarded: 1, metadata.MetricToolAttempts: 1,
		metadata.MetricIncompleteAttempts: 1, metadata.MetricCalls: 1, metadata.MetricDegradedCalls: 1,
		metadata.MetricStatusFlipCalls: 1, metadata.MetricStatusRemapped: 1, metadata.MetricValuesNotHunted: 1,
		metadata.MetricSpansDropped:      6,  // cause
		metadata.MetricEarlyDecisions:    3,  // cause
		metadata.MetricTraces:            12, // decision × reason
		metadata.MetricFindings:          9,  // kind
		metadata.MetricLateSpans:         4,  // decision
		metadata.MetricLateSignals:       10, // cause × signal reason
		metadata.MetricCacheEvictions:    2,  // decision
		metadata.MetricSignalEvictions:   5,  // signal reason
		metadata.MetricRedactions:        7,  // where
		metadata.MetricStaleSuspects:     4,  // outcome
		metadata.MetricLateFindings:      4,  // outcome
		metadata.MetricTimestampsClamped: 2,  // field
	}, got)
}

// TestStormCallsStartAtZero: storm_calls' series are per tool and cannot be exported at 0
// from the start; each is observed at 0 in the first collection that sees it and at its
// count from the next, so a reader's rate() counts a tool's first storm.
func TestStormCallsStartAtZero(t *testing.T) {
	h := newHarness(t, testConfig(), nil, WithSynchronous())
	stormOf := func(i uint64, tool string) ptrace.Traces {
		b := buffertest.NewSpanBuilder(buffertest.TraceID(i))
		root := b.Root()
		for a := range 2 {
			b.Tool(root.SpanID(), tool, "call-1", int64(100+a*300), a == 0)
		}
		return b.Traces
	}
	h.Consume(stormOf(1, "lookup"))
	h.Advance(2 * time.Second)
	lookup := "class=transient_dependency,tool=lookup"
	assert.Equal(t, map[string]int64{lookup: 0}, series(t, h, metadata.MetricStormCalls), "first collection")
	assert.Equal(t, map[string]int64{lookup: 1}, series(t, h, metadata.MetricStormCalls))

	h.Consume(stormOf(2, "lookup"))
	h.Consume(stormOf(3, "search"))
	h.Advance(2 * time.Second)
	search := "class=transient_dependency,tool=search"
	assert.Equal(t, map[string]int64{lookup: 2, search: 0}, series(t, h, metadata.MetricStormCalls), "a known series counts at once, a new one starts at 0")
	assert.Equal(t, map[string]int64{lookup: 2, search: 1}, series(t, h, metadata.MetricStormCalls))
}

// TestDecisionCacheEvictionsAreCounted: a decision the cache forgets to make room is counted
// by the decision it was. A kept one leaves a mark in the dropped set (so its later spans
// are dropped, not started over), which takes a slot there like a drop.
func TestDecisionCacheEvictionsAreCounted(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.DecisionCache.KeptTraces = 1
	cfg.DecisionCache.DroppedTraces = 1
	cfg.Sampling.CleanPercent = 0
	h := newHarness(t, cfg, nil, WithSynchronous())
	for i := range uint64(3) {
		h.Consume(buffertest.StormTrace(buffertest.TraceID(10 + i)))
		h.Consume(buffertest.CleanTrace(buffertest.TraceID(20+i), "lookup"))
	}
	h.Advance(3 * time.Second)
	assert.EqualValues(t, 2, h.Sum(metadata.MetricCacheEvictions, attribute.String("decision", "kept")))
	assert.EqualValues(t, 2+2, h.Sum(metadata.MetricCacheEvictions, attribute.String("decision", "dropped")),
		"three drops and two forgotten marks in a set of one")
	assert.EqualValues(t, 2, h.Sum(metadata.MetricSignalEvictions, attribute.String("reason", "storm")))
}

// TestBoundedCountersStartAtZero: before any span, the counters the dashboard reads by
// rate() export every series of their bounded attributes at 0, so a first event is a rise
// rate() and increase() see, and a panel of a counter that never moved shows 0, not no data.
func TestBoundedCountersStartAtZero(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	var traces []string
	for _, d := range []string{metadata.AttributeDecisionKept, metadata.AttributeDecisionDropped} {
		for _, r := range append(sample.SignalReasons[:], sample.ReasonClean) {
			traces = append(traces, "decision="+d+",reason="+string(r))
		}
	}
	for _, c := range []struct {
		metric string
		series []string
	}{
		{metadata.MetricSpansReceived, []string{""}},
		{metadata.MetricSpansDropped, []string{"cause=sampled_out", "cause=late", "cause=next_consumer_error", "cause=shutdown", "cause=unpack_error", "cause=forgotten"}},
		{metadata.MetricEarlyDecisions, []string{"cause=memory_pressure", "cause=trace_bytes", "cause=shutdown"}},
		{metadata.MetricTraces, traces},
	} {
		got := series(t, h, c.metric)
		want := map[string]int64{}
		for _, s := range c.series {
			want[s] = 0
		}
		assert.Equal(t, want, got, c.metric)
	}
}

// TestEarlyDecisionsCountFromZero: each cause's series is there at 0 before any decision,
// and one early decision of that cause makes it 1, the other causes staying at 0.
func TestEarlyDecisionsCountFromZero(t *testing.T) {
	causes := []Cause{CauseMemoryPressure, CauseTraceBytes, CauseShutdown}
	trace := func(i uint64) ptrace.Traces { return threeCalls(buffertest.TraceID(i)) }
	for _, cause := range causes {
		t.Run(cause.String(), func(t *testing.T) {
			cfg := oneShard(0)
			switch cause {
			case CauseMemoryPressure:
				// Room for three traces and a half, each within max_trace_bytes: the
				// fourth trace sheds the first.
				cfg.MaxBufferedBytes = pieceSize(trace(1)) * 7 / 2
				cfg.MaxTraceBytes = pieceSize(trace(1))
			case CauseTraceBytes:
				cfg.MaxTraceBytes = pieceSize(trace(1)) - 1
			}
			h := newHarness(t, cfg, nil)
			early := func() map[string]int64 { return series(t, h, metadata.MetricEarlyDecisions) }
			want := map[string]int64{"cause=memory_pressure": 0, "cause=trace_bytes": 0, "cause=shutdown": 0}
			require.Equal(t, want, early(), "exported at 0 before any decision")

			h.Consume(trace(1))
			if cause == CauseMemoryPressure {
				for i := range uint64(3) {
					h.CatchUp()
					h.Consume(trace(2 + i))
				}
			}
			h.CatchUp()
			if cause == CauseShutdown {
				require.NoError(t, h.Shutdown(t.Context()))
			}
			want["cause="+cause.String()] = 1
			assert.Equal(t, want, early())
			h.Conservation()
		})
	}
}

// series returns the data points of the counter name by their attributes, encoded as
// key=value pairs ("" for none): a series exported at 0 is there, one never exported is not.
func series(t *testing.T, h *harness, name string) map[string]int64 {
	t.Helper()
	m, err := h.Tel.GetMetric(name)
	require.NoError(t, err, name)
	got := map[string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		got[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp.Value
	}
	return got
}
