package stormsconnector

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func TestRecordsAreOneLogRecordEachWithTheJSONRecordAsBody(t *testing.T) {
	p := runPipeline(t, 12, 300, 10)
	wantCalls, wantUnbacked := map[string]bool{}, 0
	for i := range p.traces {
		for _, r := range p.traces[i].Truth.Records {
			wantCalls[p.traces[i].Truth.TraceID+"/"+r.Tool+"/"+strconv.Itoa(r.Attempts)] = true
		}
		for _, k := range p.traces[i].Truth.Findings {
			if k == agenttraffic.FindingUnbackedCitation {
				wantUnbacked++
			}
		}
	}
	calls, findingRecords := 0, 0
	gotCalls := map[string]bool{}
	seen := map[string]bool{}
	unbacked := 0
	for _, ld := range p.logs.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			service, _ := rl.Resource().Attributes().Get("service.name")
			lrs := rl.ScopeLogs().At(0).LogRecords()
			for j := 0; j < lrs.Len(); j++ {
				lr := lrs.At(j)
				attrs := lr.Attributes()
				schema, _ := attrs.Get(attrSchema)
				id, _ := attrs.Get(attrID)
				rev, _ := attrs.Get(attrRevision)
				key := id.Str() + "/" + strconv.Itoa(int(rev.Int()))
				require.False(t, seen[key], "record %s sent twice", key)
				seen[key] = true
				require.False(t, lr.TraceID().IsEmpty())
				switch schema.Str() {
				case stormrecord.Schema:
					var r stormrecord.Record
					require.NoError(t, json.Unmarshal([]byte(lr.Body().Str()), &r))
					require.Equal(t, id.Str(), r.ID)
					require.Equal(t, lr.TraceID().String(), r.TraceID)
					require.Equal(t, service.Str(), *r.ServiceName)
					require.Equal(t, eventStorm, lr.EventName())
					tool, _ := attrs.Get(stormrecord.AttrCallTool)
					require.Equal(t, r.ToolName, tool.Str())
					if r.Revision == 1 {
						calls++
						gotCalls[r.TraceID+"/"+r.ToolName+"/"+strconv.Itoa(r.Attempts)] = true
					}
				case stormrecord.FindingSchema:
					var r stormrecord.FindingRecord
					require.NoError(t, json.Unmarshal([]byte(lr.Body().Str()), &r))
					require.Equal(t, eventFinding, lr.EventName())
					require.Equal(t, lr.SpanID().String(), r.SpanID)
					findingRecords++
					unbacked += len(r.Findings)
				default:
					t.Fatalf("log record with schema %q", schema.Str())
				}
			}
		}
	}
	require.Equal(t, len(wantCalls), calls, "one log record per call record")
	require.Equal(t, wantCalls, gotCalls)
	require.Positive(t, findingRecords)
	require.Equal(t, wantUnbacked, unbacked, "unbacked citations in finding records")
}

func TestIncludeSelectsTheRecordsSent(t *testing.T) {
	span := ptrace.NewSpan()
	span.SetTraceID([16]byte{1})
	span.SetSpanID([8]byte{2})
	failure, _ := json.Marshal(stormrecord.Record{Schema: stormrecord.Schema, CallKey: "c1", ToolName: "charge_card", Attempts: 1, Statuses: []string{"error"}})
	storm, _ := json.Marshal(stormrecord.Record{Schema: stormrecord.Schema, CallKey: "c2", ToolName: "charge_card", Storm: true, Attempts: 3, Statuses: []string{"error", "error", "ok"}})
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, s := range []string{string(failure), string(storm), "not json"} {
		sp := spans.AppendEmpty()
		span.CopyTo(sp)
		sp.Attributes().PutStr(stormrecord.AttrCallSummary, s)
		stormrecord.Seal(sp)
	}
	for include, want := range map[string]int{includeStorm: 1, includeFailure: 1, includeFinding: 0} {
		sink := new(consumertest.LogsSink)
		cfg := createDefaultConfig()
		cfg.Logs.Include = []string{include}
		reader := sdkmetric.NewManualReader()
		set := connectortest.NewNopSettings(NewFactory().Type())
		set.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		c, err := NewFactory().CreateTracesToLogs(context.Background(), set, cfg, sink)
		require.NoError(t, err)
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		require.Equal(t, want, sink.LogRecordCount(), include)
		require.Equal(t, int64(1), malformedCount(t, reader), "the summary that is not JSON is counted")
		if want > 0 {
			lr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
			wantSeverity := map[string]plog.SeverityNumber{includeStorm: plog.SeverityNumberWarn, includeFailure: plog.SeverityNumberError}[include]
			require.Equal(t, wantSeverity, lr.SeverityNumber(), include)
		}
	}
}

func malformedCount(t *testing.T, reader *sdkmetric.ManualReader) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == metadata.RecordsMalformed {
				n := int64(0)
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					n += dp.Value
				}
				return n
			}
		}
	}
	return 0
}
