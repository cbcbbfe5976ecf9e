package stormsummaryexporter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func ptr[T any](v T) *T { return &v }

// stormRecord is a record as the processor fills it for a three-attempt storm.
func stormRecord(traceID, callKey string) stormrecord.Record {
	return stormrecord.Record{
		Schema:          stormrecord.Schema,
		ID:              stormrecord.RecordID(traceID, callKey),
		Time:            "2025-09-09T02:40:07.8Z",
		TraceID:         traceID,
		RunID:           ptr("run_7f3"),
		ServiceName:     ptr("checkout-agent"),
		CallKey:         callKey,
		ToolName:        "charge_card",
		Storm:           true,
		Layer:           stormrecord.LayerExecutor,
		Layers:          stormrecord.Layers{Executor: 3, Agent: 1},
		Attempts:        3,
		Statuses:        []string{"timeout", "error", "ok"},
		UniqueArgs:      1,
		UniqueResults:   1,
		MS:              7680,
		IdemHash:        ptr("e2b1aa44"),
		TokensIn:        ptr(int64(2390)),
		TokensOut:       ptr(int64(84)),
		FailedTokensIn:  ptr(int64(1602)),
		FailedTokensOut: ptr(int64(48)),
		SideEffects:     []string{"unknown", "unknown", "external"},
		Class:           ptr("transient_dependency"),
		StatusFlip:      true,
		Findings:        []stormrecord.Finding{},
		AttemptSpanIDs:  []string{"0000000000000001", "0000000000000002", "0000000000000003"},
		Timeline: []stormrecord.AttemptTime{
			{StartMSOffset: 0, DurationMS: 4000, Status: "timeout", Layer: "executor", Attempt: 1},
			{StartMSOffset: 4080, DurationMS: 1900, Status: "error", Layer: "executor", Attempt: 2},
			{StartMSOffset: 6080, DurationMS: 1600, Status: "ok", Layer: "executor", Attempt: 3},
		},
	}
}

func traceIDHex(n byte) string {
	var id [16]byte
	id[0], id[15] = 0xab, n
	return hex.EncodeToString(id[:])
}

// summaryTrace builds one trace per record's trace id: the record's attempts as spans,
// the summary JSON on the last one, as the processor leaves them (sealed).
func summaryTrace(t *testing.T, records ...stormrecord.Record) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range records {
		var traceID pcommon.TraceID
		raw, err := hex.DecodeString(records[i].TraceID)
		require.NoError(t, err)
		copy(traceID[:], raw)
		summary, err := json.Marshal(&records[i])
		require.NoError(t, err)
		for attempt := 1; attempt <= max(records[i].Attempts, 1); attempt++ {
			span := spans.AppendEmpty()
			span.SetTraceID(traceID)
			span.SetSpanID(pcommon.SpanID{byte(i), byte(attempt)})
			span.SetName("execute_tool " + records[i].ToolName)
			span.Attributes().PutStr(stormrecord.AttrCallKey, records[i].CallKey)
			if attempt == max(records[i].Attempts, 1) {
				span.Attributes().PutStr(stormrecord.AttrCallSummary, string(summary))
			}
			stormrecord.Seal(span)
		}
	}
	return td
}

func testConfig(t *testing.T) *Config {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Path = filepath.Join(t.TempDir(), "summaries", "storms.jsonl")
	return cfg
}

// newTestExporter builds the unwrapped exporter (no exporterhelper) on recorded telemetry.
func newTestExporter(t *testing.T, cfg *Config, tel *componenttest.Telemetry, opts ...exporterOption) *summaryExporter {
	t.Helper()
	e, err := newSummaryExporter(cfg, settings(tel), opts...)
	require.NoError(t, err)
	return e
}

func settings(tel *componenttest.Telemetry) exporter.Settings {
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	return set
}

func startExporter(t *testing.T, e *summaryExporter) {
	t.Helper()
	require.NoError(t, e.start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, e.shutdown(context.Background())) })
}

func newTelemetry(t *testing.T) *componenttest.Telemetry {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	return tel
}

// counter sums an int64 counter of the exporter's telemetry; 0 when never recorded.
func counter(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.Truef(t, ok, "%s is %T, want an int64 sum", name, m.Data)
	var total int64
	for _, dp := range sum.DataPoints {
		total += dp.Value
	}
	return total
}

// readLines returns the file's lines and fails when one is not a whole JSON record.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return parseLines(t, raw)
}

func parseLines(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	if len(raw) > 0 {
		require.Equal(t, byte('\n'), raw[len(raw)-1], "file must end with a whole line")
	}
	var lines []map[string]any
	scanner := bufio.NewScanner(bytes.NewReader(raw))
	scanner.Buffer(make([]byte, 0, 1<<20), 4<<20)
	for scanner.Scan() {
		var line map[string]any
		require.NoErrorf(t, json.Unmarshal(scanner.Bytes(), &line), "line %q", scanner.Text())
		lines = append(lines, line)
	}
	require.NoError(t, scanner.Err())
	return lines
}

func ids(lines []map[string]any) []string {
	out := make([]string, len(lines))
	for i, line := range lines {
		out[i], _ = line["id"].(string)
	}
	return out
}
