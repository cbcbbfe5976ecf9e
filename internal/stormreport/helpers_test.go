package stormreport

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func ptr[T any](v T) *T { return &v }

// storm is a storm record with one timed attempt per status, 1 s apart.
func storm(callKey, tool, class string, statuses ...string) stormrecord.Record {
	r := stormrecord.Record{
		Schema: stormrecord.Schema, ID: stormrecord.RecordID("trace-"+callKey, callKey),
		Time: "2025-09-09T02:40:07.8Z", TraceID: "trace-" + callKey, RunID: ptr("run_1"),
		CallKey: callKey, ToolName: tool, Storm: true, Layer: stormrecord.LayerExecutor,
		Attempts: len(statuses), Statuses: statuses, UniqueArgs: 1, UniqueResults: 1,
		MS: int64(len(statuses)) * 1000, Findings: []stormrecord.Finding{},
	}
	if class != "" {
		r.Class = ptr(class)
	}
	for i, status := range statuses {
		r.Timeline = append(r.Timeline, stormrecord.AttemptTime{
			StartMSOffset: int64(i) * 1000, DurationMS: 800, Status: status, Layer: "executor", Attempt: i + 1,
		})
	}
	return r
}

func withFailedTokens(r stormrecord.Record, in, out *int64) stormrecord.Record {
	r.FailedTokensIn, r.FailedTokensOut = in, out
	return r
}

// writeJSONL writes records (encoded) and raw strings (as they are) one per line.
func writeJSONL(t *testing.T, path string, gz bool, lines ...any) {
	t.Helper()
	file, err := os.Create(path)
	require.NoError(t, err)
	var w io.Writer = file
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(file)
		w = zw
	}
	for _, line := range lines {
		raw, ok := line.(string)
		if !ok {
			encoded, err := json.Marshal(line)
			require.NoError(t, err)
			raw = string(encoded)
		}
		_, err := io.WriteString(w, raw+"\n")
		require.NoError(t, err)
	}
	if zw != nil {
		require.NoError(t, zw.Close())
	}
	require.NoError(t, file.Close())
}

// citation is the finding record of an answer span citing the given assets, none read.
func citation(traceID, spanID, time string, assets ...string) stormrecord.FindingRecord {
	r := stormrecord.FindingRecord{
		Schema: stormrecord.FindingSchema, ID: stormrecord.FindingRecordID(traceID, spanID), Time: time,
		TraceID: traceID, RunID: ptr("run_1"), SpanID: spanID, SpanName: "invoke_agent support",
		Findings: []stormrecord.Finding{},
	}
	for _, asset := range assets {
		r.Findings = append(r.Findings, stormrecord.Finding{Kind: "unbacked_citation", Detail: `answer cites "` + asset + `" with no successful read in the trace`})
	}
	return r
}
