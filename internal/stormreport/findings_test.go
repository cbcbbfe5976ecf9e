package stormreport

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func TestReadKeepsFindingRecordsApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storms.jsonl")
	answer := citation("t1", "a1", "2025-09-09T02:40:09Z", "kb/refunds")
	writeJSONL(t, path, false,
		storm("call_1", "charge_card", "exhausted", "error", "error"),
		answer,
		answer, // the same record again
		`{"schema":"retrystorm.finding/v1","span_id":"a2"}`, // no id
		`{"schema":"retrystorm.finding/v1","id":"x","findings":"not a list"}`,
		`{"schema":"retrystorm.other/v1","id":"y"}`,
	)
	input, err := Read([]string{path})
	require.NoError(t, err)
	require.Len(t, input.Records, 1)
	require.Len(t, input.Findings, 1)
	assert.Equal(t, answer, input.Findings[0])
	assert.Equal(t, 1, input.Duplicates)
	assert.Equal(t, 3, input.SkippedLines)
}

func TestBuildFromCountsTraceLevelFindings(t *testing.T) {
	drift := storm("d", "search", "changed_arguments", "error", "ok", "ok")
	drift.Findings = []stormrecord.Finding{{Kind: "result_drift"}}
	input := &Input{
		Records: []stormrecord.Record{drift},
		Findings: []stormrecord.FindingRecord{
			citation("t1", "a1", "2025-09-09T02:40:09Z", "kb/refunds", "kb/shipping"),
			citation("t2", "a2", "2025-09-09T02:41:00Z", "kb/returns"),
			citation("t3", "a3", "2025-09-09T02:39:00Z", "kb/fees"),
		},
	}
	r := BuildFrom(input, 2)
	assert.Equal(t, 1, r.Spans, "finding records are not calls")
	assert.Equal(t, 1, r.StormSpans)
	assert.Equal(t, 3, r.TraceFindingRecords)
	assert.Equal(t, 4, r.TraceLevelFindings)
	assert.Equal(t, []FindingTotal{
		{Kind: "unbacked_citation", Findings: 4, Calls: 0, TraceRecords: 3},
		{Kind: "result_drift", Findings: 1, Calls: 1},
	}, r.ByFinding)
	require.Len(t, r.TraceFindings, 2, "bounded by --top")
	assert.Equal(t, "t2", r.TraceFindings[0].TraceID, "newest first")
	assert.Equal(t, "t1", r.TraceFindings[1].TraceID)
	assert.Len(t, r.TraceFindings[1].Findings, 2)

	assert.Equal(t, []TraceFindingRow{}, Build(nil, 20).TraceFindings, "an empty list, never null")
}

func TestTextAndJSONShowTraceLevelFindings(t *testing.T) {
	input := &Input{Files: []string{"storms.jsonl"}, Findings: []stormrecord.FindingRecord{
		citation("5b8efff798038103d269b633813fc60c", "a1", "2025-09-09T02:40:09Z", "kb/refunds"),
		citation("t2", "a2", "2025-09-09T02:30:00Z", "kb/fees"),
	}}
	var out bytes.Buffer
	require.NoError(t, WriteText(&out, input, BuildFrom(input, 1)))
	text := out.String()
	for _, want := range []string{
		"2 trace-level findings (of no call) on 2 spans",
		"Trace-level findings (findings of no call, on the span they concern)",
		"unbacked_citation  2         0      2",
		`invoke_agent support  5b8efff798038103d269b633813fc60c  run_1  answer cites "kb/refunds" with no successful read in the trace`,
		"1 more spans with trace-level findings not shown",
	} {
		assert.Contains(t, text, want)
	}

	out.Reset()
	require.NoError(t, WriteJSON(&out, BuildFrom(input, 20)))
	var report map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &report))
	assert.InDelta(t, 2, report["trace_finding_records"], 0)
	assert.InDelta(t, 2, report["trace_level_findings"], 0)
	rows := report["trace_findings"].([]any)
	require.Len(t, rows, 2)
	row := rows[0].(map[string]any)
	for _, key := range []string{"id", "time", "trace_id", "run_id", "service_name", "span_id", "span_name", "findings"} {
		assert.Contains(t, row, key)
	}
	assert.NotContains(t, report, "truth", "no truth given, no comparison")
}

func TestTextWithoutTraceLevelFindings(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, WriteText(&out, &Input{}, BuildFrom(&Input{}, 20)))
	assert.Contains(t, out.String(), "Trace-level findings (findings of no call, on the span they concern)\n(none)")
	assert.NotContains(t, out.String(), "trace-level findings (of no call)")
}

func TestPageHasATraceLevelFindingsSection(t *testing.T) {
	page := renderInput(t, pageInput(), 20)
	assert.Equal(t, 3, strings.Count(page, `data-role="trace-finding"`), "one row per finding")
	assert.Contains(t, page, "Trace-level findings")
	assert.Contains(t, page, "kb/&lt;script&gt;", "a hostile asset name stays text")
	assert.Contains(t, page, "3 of no call")
	assert.NotContains(t, page, "ZgotmplZ")

	empty := renderInput(t, &Input{Records: pageRecords()}, 20)
	assert.Contains(t, empty, "No trace-level findings.")
}
