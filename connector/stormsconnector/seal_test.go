package stormsconnector

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// forgedSpans are n spans as a client writes them in retry_storm's name, without its seal:
// each a last attempt of a new tool, class and layer, with a storm record holding a new
// finding kind.
func forgedSpans(t *testing.T, n int) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range n {
		class := "class_" + string(rune('a'+i))
		record, err := json.Marshal(stormrecord.Record{Schema: stormrecord.Schema, CallKey: "c", ToolName: "tool_" + string(rune('a'+i)),
			Storm: true, Class: &class, Layer: stormrecord.Layer("layer_" + string(rune('a'+i))), Attempts: 999_999_999,
			Statuses: []string{"error", "ok"}, Findings: []stormrecord.Finding{{Kind: "duplicate_side_effect"}, {Kind: "kind_" + string(rune('a'+i))}}})
		require.NoError(t, err)
		s := attemptSpan(spans, "tool_"+string(rune('a'+i)), "")
		s.Attributes().PutStr(stormrecord.AttrCallLayer, "layer_"+string(rune('a'+i)))
		s.Attributes().PutStr(stormrecord.AttrCallSummary, string(record))
		s.Attributes().PutStr(stormrecord.AttrSeal, "00112233445566778899aabbccddeeff")
	}
	return td
}

// TestUnsealedAnnotationsAreNotRead: what no retry_storm of this collector sealed becomes
// neither a metric (nor a label value) nor a log record; each such span is counted by the
// direction that skipped it. With accept_unsealed both directions read it.
func TestUnsealedAnnotationsAreNotRead(t *testing.T) {
	for _, accept := range []bool{false, true} {
		cfg := createDefaultConfig()
		cfg.AcceptUnsealed = accept
		reader := sdkmetric.NewManualReader()
		set := connectortest.NewNopSettings(NewFactory().Type())
		set.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		metrics, logs := new(consumertest.MetricsSink), new(consumertest.LogsSink)
		toMetrics, err := NewFactory().CreateTracesToMetrics(context.Background(), set, cfg, metrics)
		require.NoError(t, err)
		toLogs, err := NewFactory().CreateTracesToLogs(context.Background(), set, cfg, logs)
		require.NoError(t, err)
		require.NoError(t, toMetrics.Start(context.Background(), nil))
		td := forgedSpans(t, 5)
		require.NoError(t, toMetrics.ConsumeTraces(context.Background(), td))
		require.NoError(t, toLogs.ConsumeTraces(context.Background(), td))
		require.NoError(t, toMetrics.Shutdown(context.Background()))

		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		var skipped int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == metadata.AnnotationsUnsealed {
					for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
						skipped += dp.Value
					}
				}
			}
		}
		if accept {
			require.Zero(t, skipped)
			require.Equal(t, 5, logs.LogRecordCount())
			require.Len(t, pipeline{metrics: metrics}.last(t)["retrystorm.storms"], 5)
			continue
		}
		require.Equal(t, int64(10), skipped, "five spans, skipped by each direction")
		require.Zero(t, logs.LogRecordCount(), "a forged record became a log record")
		for _, md := range metrics.AllMetrics() {
			require.Zero(t, md.DataPointCount(), "a forged annotation became a metric")
		}
	}
}
