package stormsummaryexporter

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// The storm summary record (README, "The record"): every field, with the JSON type it must
// have.
var recordFieldTypes = map[string]string{
	"schema": "string", "id": "string", "time": "string", "trace_id": "string",
	"run_id": "string|null", "service_name": "string|null", "call_key": "string",
	"tool_name": "string", "storm": "bool", "layer": "string", "layers": "object",
	"attempts": "number", "statuses": "array", "unique_args": "number",
	"unique_results": "number", "ms": "number", "idem_hash": "string|null",
	"tokens_in": "number|null", "tokens_out": "number|null",
	"failed_tokens_in": "number|null", "failed_tokens_out": "number|null",
	"side_effects": "array", "class": "string|null", "status_flip": "bool",
	"findings": "array", "incomplete_attempts": "number", "attempt_span_ids": "array",
	"trace_url": "string", "revision": "number",
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func TestRecordFieldsPresentWithTypes(t *testing.T) {
	cfg := testConfig(t)
	cfg.TraceURL = "http://localhost:16686/trace/{trace_id}?call={call_key}&run={run_id}"
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)

	known := stormRecord(traceIDHex(1), "span_19")
	unknown := stormRecord(traceIDHex(2), "call a/b")
	unknown.RunID, unknown.ServiceName, unknown.IdemHash, unknown.Class = nil, nil, nil, nil
	unknown.TokensIn, unknown.TokensOut, unknown.FailedTokensIn, unknown.FailedTokensOut = nil, nil, nil, nil
	unknown.Findings, unknown.SideEffects, unknown.Timeline = nil, nil, nil
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, known, unknown)))

	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 2)
	for _, line := range lines {
		for field, want := range recordFieldTypes {
			require.Containsf(t, line, field, "record %v lacks %s", line["call_key"], field)
			assert.Containsf(t, "|"+want+"|", "|"+jsonType(line[field])+"|", "%s is %s, want %s", field, jsonType(line[field]), want)
		}
		layers := line["layers"].(map[string]any)
		for _, layer := range []string{"transport", "executor", "agent"} {
			assert.Equal(t, "number", jsonType(layers[layer]), "layers.%s", layer)
		}
	}
	assert.Equal(t, "retrystorm.storm/v1", lines[0]["schema"])
	assert.Equal(t, []any{"timeout", "error", "ok"}, lines[0]["statuses"])
	assert.InDelta(t, 1602, lines[0]["failed_tokens_in"], 0)
	assert.Len(t, lines[0]["timeline"], 3)
	assert.Equal(t, "http://localhost:16686/trace/"+traceIDHex(1)+"?call=span_19&run=run_7f3", lines[0]["trace_url"])

	for _, field := range []string{"run_id", "service_name", "idem_hash", "class", "tokens_in", "tokens_out", "failed_tokens_in", "failed_tokens_out"} {
		assert.Nilf(t, lines[1][field], "%s unknown must be null, never a fabricated value", field)
	}
	assert.Equal(t, []any{}, lines[1]["findings"])
	assert.Equal(t, []any{}, lines[1]["side_effects"])
	assert.NotContains(t, lines[1], "timeline")
	assert.Equal(t, "http://localhost:16686/trace/"+traceIDHex(2)+"?call=call%20a%2Fb&run=", lines[1]["trace_url"])
	assert.Equal(t, int64(2), counter(t, tel, metadata.MetricRecordsWritten))
}

func TestIncludeSelectsRecords(t *testing.T) {
	storm := stormRecord(traceIDHex(1), "storm")
	failure := stormRecord(traceIDHex(2), "failure")
	failure.Storm, failure.Attempts, failure.Statuses = false, 1, []string{"error"}
	finding := stormRecord(traceIDHex(3), "finding")
	finding.Storm, finding.Attempts, finding.Statuses = false, 1, []string{"ok"}
	finding.Findings = []stormrecord.Finding{{Kind: "result_drift", Detail: "two result hashes"}}
	recovered := stormRecord(traceIDHex(4), "single_ok")
	recovered.Storm, recovered.Attempts, recovered.Statuses = false, 1, []string{"ok"}

	tests := []struct {
		include []string
		want    []string
	}{
		{include: []string{"storm"}, want: []string{"storm"}},
		{include: []string{"failure"}, want: []string{"failure"}},
		{include: []string{"finding"}, want: []string{"finding"}},
		{include: []string{"storm", "failure", "finding"}, want: []string{"storm", "failure", "finding"}},
	}
	for _, tt := range tests {
		t.Run(jsonString(tt.include), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Include = tt.include
			e := newTestExporter(t, cfg, newTelemetry(t))
			startExporter(t, e)
			require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, storm, failure, finding, recovered)))
			var got []string
			for _, line := range readLines(t, cfg.Path) {
				got = append(got, line["call_key"].(string))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func jsonString(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

func TestSameTraceExportedTwiceWritesOneRecord(t *testing.T) {
	cfg := testConfig(t)
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)

	record := stormRecord(traceIDHex(7), "span_19")
	td := summaryTrace(t, record, record) // the same call twice in one batch, too
	require.NoError(t, e.pushTraces(context.Background(), td))
	require.NoError(t, e.pushTraces(context.Background(), td))

	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 1)
	assert.Equal(t, stormrecord.RecordID(traceIDHex(7), "span_19"), lines[0]["id"])
	assert.Equal(t, int64(1), counter(t, tel, metadata.MetricRecordsWritten))
	assert.Equal(t, int64(3), counter(t, tel, metadata.MetricRecordsDeduplicated))
}

func TestIDsStableAcrossReexportAfterRestart(t *testing.T) {
	cfg := testConfig(t)
	first := stormRecord(traceIDHex(1), "span_19")
	second := stormRecord(traceIDHex(2), "span_20")
	td := summaryTrace(t, first, second)

	before := newTestExporter(t, cfg, newTelemetry(t))
	require.NoError(t, before.start(context.Background(), nil))
	require.NoError(t, before.pushTraces(context.Background(), td))
	require.NoError(t, before.shutdown(context.Background()))
	written := ids(readLines(t, cfg.Path))

	tel := newTelemetry(t)
	after := newTestExporter(t, cfg, tel)
	startExporter(t, after)
	require.NoError(t, after.pushTraces(context.Background(), td))

	lines := readLines(t, cfg.Path)
	assert.Equal(t, written, ids(lines), "a re-export after a restart must not append")
	assert.Equal(t, []string{stormrecord.RecordID(traceIDHex(1), "span_19"), stormrecord.RecordID(traceIDHex(2), "span_20")}, written)
	assert.Equal(t, int64(2), counter(t, tel, metadata.MetricRecordsDeduplicated))
	assert.Equal(t, int64(0), counter(t, tel, metadata.MetricRecordsWritten))
}

func TestRecordWithoutIDGetsTheStableID(t *testing.T) {
	cfg := testConfig(t)
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)
	record := stormRecord(traceIDHex(3), "span_21")
	record.ID, record.TraceID = "", traceIDHex(3)
	require.NoError(t, e.pushTraces(context.Background(), summaryTrace(t, record)))
	assert.Equal(t, []string{stormrecord.RecordID(traceIDHex(3), "span_21")}, ids(readLines(t, cfg.Path)))
}

func TestMalformedSummariesAreCountedAndSkipped(t *testing.T) {
	cfg := testConfig(t)
	tel := newTelemetry(t)
	e := newTestExporter(t, cfg, tel)
	startExporter(t, e)

	td := summaryTrace(t, stormRecord(traceIDHex(1), "good"))
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for _, bad := range []string{`{"schema":`, `{"schema":"other/v9","call_key":"x"}`, `{"schema":"retrystorm.storm/v1","call_key":""}`, `[]`} {
		spans.AppendEmpty().Attributes().PutStr(stormrecord.AttrCallSummary, bad)
	}
	spans.AppendEmpty().Attributes().PutInt(stormrecord.AttrCallSummary, 42)

	require.NotPanics(t, func() {
		require.NoError(t, e.pushTraces(context.Background(), td))
	})
	lines := readLines(t, cfg.Path)
	require.Len(t, lines, 1)
	assert.Equal(t, "good", lines[0]["call_key"])
	assert.Equal(t, int64(5), counter(t, tel, metadata.MetricRecordsMalformed))
}

func TestBatchWithoutSummariesTouchesNothing(t *testing.T) {
	cfg := testConfig(t)
	e := newTestExporter(t, cfg, newTelemetry(t))
	startExporter(t, e)
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("clean")
	require.NoError(t, e.pushTraces(context.Background(), td))
	info, err := os.Stat(cfg.Path)
	require.NoError(t, err)
	assert.Zero(t, info.Size())
}

func TestPushAfterShutdownFails(t *testing.T) {
	cfg := testConfig(t)
	e := newTestExporter(t, cfg, newTelemetry(t))
	require.NoError(t, e.start(context.Background(), nil))
	require.NoError(t, e.shutdown(context.Background()))
	err := e.pushTraces(context.Background(), summaryTrace(t, stormRecord(traceIDHex(1), "late")))
	assert.ErrorContains(t, err, "summary file is not open")
}
