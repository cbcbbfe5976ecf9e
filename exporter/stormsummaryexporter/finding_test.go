package stormsummaryexporter

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// findingRecord is a finding record as the processor fills it for an answer citing two
// assets nothing read.
func findingRecord(traceID, spanID string) stormrecord.FindingRecord {
	return stormrecord.FindingRecord{
		Schema: stormrecord.FindingSchema, ID: stormrecord.FindingRecordID(traceID, spanID),
		Time: "2025-09-09T02:40:09.1Z", TraceID: traceID, RunID: ptr("run_7f3"),
		ServiceName: ptr("support-agent"), SpanID: spanID, SpanName: "invoke_agent support",
		Findings: []stormrecord.Finding{
			{Kind: "unbacked_citation", Detail: `answer cites "kb/refunds" with no successful read in the trace`},
			{Kind: "unbacked_citation", Detail: `answer cites "kb/shipping" with no successful read in the trace`},
		},
	}
}

// addFindingSpan appends the answer span carrying the record, as the processor leaves it.
func addFindingSpan(t *testing.T, td ptrace.Traces, record stormrecord.FindingRecord) {
	t.Helper()
	if td.ResourceSpans().Len() == 0 {
		td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	}
	span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	var traceID pcommon.TraceID
	var spanID pcommon.SpanID
	raw, err := hex.DecodeString(record.TraceID)
	require.NoError(t, err)
	copy(traceID[:], raw)
	raw, err = hex.DecodeString(record.SpanID)
	require.NoError(t, err)
	copy(spanID[:], raw)
	span.SetTraceID(traceID)
	span.SetSpanID(spanID)
	span.SetName(record.SpanName)
	encoded, err := json.Marshal(&record)
	require.NoError(t, err)
	span.Attributes().PutStr(stormrecord.AttrFindingSummary, string(encoded))
	stormrecord.Seal(span)
}

var findingFieldTypes = map[string]string{
	"schema": "string", "id": "string", "time": "string", "trace_id": "string",
	"run_id": "string|null", "service_name": "string|null", "span_id": "string",
	"span_name": "string", "findings": "array", "trace_url": "string", "revision": "number",
}

func TestFindingRecordWrittenWithEveryField(t *testing.T) {
	cfg := testConfig(t)
	cfg.Include = []string{includeFinding}
	cfg.TraceURL = "http://localhost:16686/trace/{trace_id}?call={call_key}&run={run_id}"
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)

	known := findingRecord(traceIDHex(1), "00000000000000a1")
	unknown := findingRecord(traceIDHex(2), "00000000000000a2")
	unknown.RunID, unknown.ServiceName = nil, nil
	td := ptrace.NewTraces()
	addFindingSpan(t, td, known)
	addFindingSpan(t, td, unknown)
	require.NoError(t, e.pushTraces(context.Background(), td))

	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 2)
	for _, line := range lines {
		for field, want := range findingFieldTypes {
			require.Containsf(t, line, field, "record lacks %s", field)
			assert.Containsf(t, "|"+want+"|", "|"+jsonType(line[field])+"|", "%s is %s, want %s", field, jsonType(line[field]), want)
		}
		assert.Len(t, line, len(findingFieldTypes), "a finding record has no call fields")
	}
	assert.Equal(t, "retrystorm.finding/v1", lines[0]["schema"])
	assert.Equal(t, stormrecord.FindingRecordID(traceIDHex(1), "00000000000000a1"), lines[0]["id"])
	assert.Len(t, lines[0]["findings"], 2)
	assert.Equal(t, "http://localhost:16686/trace/"+traceIDHex(1)+"?call=&run=run_7f3", lines[0]["trace_url"],
		"a finding record has no call key")
	assert.Nil(t, lines[1]["run_id"])
	assert.Nil(t, lines[1]["service_name"])
}

func TestIncludeFindingSelectsFindingRecords(t *testing.T) {
	tests := []struct {
		include []string
		want    []string
	}{
		{include: []string{"storm"}, want: []string{"retrystorm.storm/v1"}},
		{include: []string{"storm", "failure"}, want: []string{"retrystorm.storm/v1"}},
		{include: []string{"finding"}, want: []string{"retrystorm.finding/v1"}},
		{include: []string{"storm", "failure", "finding"}, want: []string{"retrystorm.storm/v1", "retrystorm.finding/v1"}},
	}
	for _, tt := range tests {
		t.Run(jsonString(tt.include), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Include = tt.include
			e := newTestExporter(t, cfg, newTelemetry(t))
			startExporter(t, e)
			td := summaryTrace(t, stormRecord(traceIDHex(1), "storm"))
			addFindingSpan(t, td, findingRecord(traceIDHex(1), "00000000000000a1"))
			empty := findingRecord(traceIDHex(1), "00000000000000a2")
			empty.Findings = nil
			addFindingSpan(t, td, empty)
			require.NoError(t, e.pushTraces(context.Background(), td))
			var got []string
			for _, line := range readLines(t, cfg.Path) {
				got = append(got, line["schema"].(string))
			}
			assert.Equal(t, tt.want, got, "a finding record without findings is never written")
		})
	}
}

func TestFindingRecordWrittenOnceAcrossReexportAndRestart(t *testing.T) {
	cfg := testConfig(t)
	cfg.Include = []string{includeStorm, includeFinding}
	td := summaryTrace(t, stormRecord(traceIDHex(5), "span_19"))
	addFindingSpan(t, td, findingRecord(traceIDHex(5), "00000000000000a1"))
	addFindingSpan(t, td, findingRecord(traceIDHex(5), "00000000000000a1")) // twice in one batch

	tel := newTelemetry(t)
	before := newTestExporter(t, cfg, tel)
	require.NoError(t, before.start(context.Background(), nil))
	require.NoError(t, before.pushTraces(context.Background(), td))
	require.NoError(t, before.pushTraces(context.Background(), td))
	require.NoError(t, before.shutdown(context.Background()))
	written := ids(readLines(t, cfg.Path))
	assert.Equal(t, []string{stormrecord.RecordID(traceIDHex(5), "span_19"), stormrecord.FindingRecordID(traceIDHex(5), "00000000000000a1")}, written)
	assert.Equal(t, map[string]int64{stormrecord.Schema: 1, stormrecord.FindingSchema: 1}, bySchema(t, tel, metadata.MetricRecordsWritten))
	assert.Equal(t, map[string]int64{stormrecord.Schema: 1, stormrecord.FindingSchema: 3}, bySchema(t, tel, metadata.MetricRecordsDeduplicated))

	afterTel := newTelemetry(t)
	after := newTestExporter(t, cfg, afterTel)
	startExporter(t, after)
	require.NoError(t, after.pushTraces(context.Background(), td))
	assert.Equal(t, written, ids(readLines(t, cfg.Path)), "the id memory preloaded from the file holds finding records too")
	assert.Equal(t, int64(0), counter(t, afterTel, metadata.MetricRecordsWritten))
}

func TestFindingRecordWithoutIDsGetsThemFromTheSpan(t *testing.T) {
	cfg := testConfig(t)
	cfg.Include = []string{includeFinding}
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)
	td := ptrace.NewTraces()
	addFindingSpan(t, td, findingRecord(traceIDHex(6), "00000000000000b1"))
	span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	span.Attributes().PutStr(stormrecord.AttrFindingSummary, `{"schema":"retrystorm.finding/v1","findings":[{"kind":"unbacked_citation","detail":"d"}]}`)
	require.NoError(t, e.pushTraces(context.Background(), td))
	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 1)
	assert.Equal(t, traceIDHex(6), lines[0]["trace_id"])
	assert.Equal(t, "00000000000000b1", lines[0]["span_id"])
	assert.Equal(t, stormrecord.FindingRecordID(traceIDHex(6), "00000000000000b1"), lines[0]["id"])
}

func TestMalformedFindingRecordsAreCountedAndSkipped(t *testing.T) {
	cfg := testConfig(t)
	cfg.Include = []string{includeFinding}
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)
	td := ptrace.NewTraces()
	addFindingSpan(t, td, findingRecord(traceIDHex(1), "00000000000000a1"))
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for _, bad := range []string{`{"schema":`, `{"schema":"retrystorm.storm/v1","span_id":"aa"}`, `[]`} {
		spans.AppendEmpty().Attributes().PutStr(stormrecord.AttrFindingSummary, bad)
	}
	// No span id in the record and none on the span: nothing to derive the id from.
	spans.AppendEmpty().Attributes().PutStr(stormrecord.AttrFindingSummary, `{"schema":"retrystorm.finding/v1","findings":[{"kind":"k","detail":"d"}]}`)
	spans.AppendEmpty().Attributes().PutInt(stormrecord.AttrFindingSummary, 7)
	require.NoError(t, e.pushTraces(context.Background(), td))
	require.Len(t, readLines(t, cfg.Path), 1)
	assert.Equal(t, int64(5), counter(t, tel, metadata.MetricRecordsMalformed))
}

// bySchema sums a counter of the exporter's telemetry per value of its schema attribute.
func bySchema(t *testing.T, tel *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok)
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		schema, _ := dp.Attributes.Value(metadata.AttrSchema)
		out[schema.AsString()] += dp.Value
	}
	return out
}
