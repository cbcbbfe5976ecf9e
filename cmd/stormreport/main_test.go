package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/net/html"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/stormreport"
)

// loggedAttempt is one per-attempt row of testdata/example_attempts.jsonl (the labeled
// example of ../shared/seeds/000_5e1f7258e119a6b3.txt), the per-attempt record format (one
// line per tool attempt).
type loggedAttempt struct {
	RunID      string `json:"run_id"`
	SpanID     string `json:"span_id"`
	Attempt    int    `json:"attempt"`
	ToolName   string `json:"tool_name"`
	ArgsHash   string `json:"args_hash"`
	IdemHash   string `json:"idem_hash"`
	Status     string `json:"status"`
	TStart     int64  `json:"t_start"`
	TEnd       int64  `json:"t_end"`
	TokenIn    int64  `json:"token_in"`
	TokenOut   int64  `json:"token_out"`
	SideEffect string `json:"side_effect"`
}

// exampleTraceID begins with the id of the source text the example comes from.
var exampleTraceID = pcommon.TraceID{0x5e, 0x1f, 0x72, 0x58, 0xe1, 0x19, 0xa6, 0xb3, 1, 2, 3, 4, 5, 6, 7, 8}

func readExampleAttempts(t *testing.T) []loggedAttempt {
	t.Helper()
	file, err := os.Open(filepath.Join("testdata", "example_attempts.jsonl"))
	require.NoError(t, err)
	defer file.Close()
	var attempts []loggedAttempt
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		var a loggedAttempt
		require.NoError(t, json.Unmarshal(scanner.Bytes(), &a))
		attempts = append(attempts, a)
	}
	require.NoError(t, scanner.Err())
	return attempts
}

// exampleRecord summarises the record's attempts the way the processor fills the record for a
// call with one call id (executor layer); it stands in for the processor here.
func exampleRecord(attempts []loggedAttempt) stormrecord.Record {
	first, last := attempts[0], attempts[len(attempts)-1]
	traceID := exampleTraceID.String()
	args := map[string]bool{}
	var tokensIn, tokensOut, failedIn, failedOut int64
	r := stormrecord.Record{
		Schema: stormrecord.Schema, ID: stormrecord.RecordID(traceID, first.SpanID),
		Time: time.UnixMilli(last.TEnd).UTC().Format(time.RFC3339Nano), TraceID: traceID,
		RunID: &first.RunID, CallKey: first.SpanID, ToolName: first.ToolName,
		Storm: len(attempts) >= 2, Layer: stormrecord.LayerExecutor,
		Layers:   stormrecord.Layers{Executor: len(attempts), Agent: 1},
		Attempts: len(attempts), MS: last.TEnd - first.TStart, IdemHash: &first.IdemHash,
		Findings: []stormrecord.Finding{}, Class: ptr("transient_dependency"),
	}
	for _, a := range attempts {
		r.Statuses = append(r.Statuses, a.Status)
		r.SideEffects = append(r.SideEffects, a.SideEffect)
		r.AttemptSpanIDs = append(r.AttemptSpanIDs, spanID(a.Attempt).String())
		r.Timeline = append(r.Timeline, stormrecord.AttemptTime{
			StartMSOffset: a.TStart - first.TStart, DurationMS: a.TEnd - a.TStart,
			Status: a.Status, Layer: stormrecord.LayerExecutor, Attempt: a.Attempt,
		})
		args[a.ArgsHash] = true
		tokensIn, tokensOut = tokensIn+a.TokenIn, tokensOut+a.TokenOut
		if a.Status != "ok" {
			failedIn, failedOut = failedIn+a.TokenIn, failedOut+a.TokenOut
		}
	}
	r.UniqueArgs, r.UniqueResults = len(args), 1
	r.TokensIn, r.TokensOut, r.FailedTokensIn, r.FailedTokensOut = &tokensIn, &tokensOut, &failedIn, &failedOut
	r.StatusFlip = len(slices.Compact(slices.Sorted(slices.Values(r.Statuses)))) > 1
	return r
}

func ptr[T any](v T) *T { return &v }

func spanID(attempt int) pcommon.SpanID { return pcommon.SpanID{0x19, 0, 0, 0, 0, 0, 0, byte(attempt)} }

// exampleTrace is the record's three attempts as spans, the summary on the last, as the
// processor leaves them (sealed).
func exampleTrace(t *testing.T, attempts []loggedAttempt) ptrace.Traces {
	t.Helper()
	summary, err := json.Marshal(exampleRecord(attempts))
	require.NoError(t, err)
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, a := range attempts {
		span := spans.AppendEmpty()
		span.SetTraceID(exampleTraceID)
		span.SetSpanID(spanID(a.Attempt))
		span.SetName("execute_tool " + a.ToolName)
		span.SetStartTimestamp(pcommon.Timestamp(a.TStart * int64(time.Millisecond)))
		span.SetEndTimestamp(pcommon.Timestamp(a.TEnd * int64(time.Millisecond)))
		if i == len(attempts)-1 {
			span.Attributes().PutStr(stormrecord.AttrCallSummary, string(summary))
			stormrecord.Seal(span)
		}
	}
	return td
}

// exportExample runs the example trace through the storm_summary exporter, twice (a re-export),
// and returns the summary file.
func exportExample(t *testing.T) string {
	t.Helper()
	factory := stormsummaryexporter.NewFactory()
	cfg := factory.CreateDefaultConfig().(*stormsummaryexporter.Config)
	cfg.Path = filepath.Join(t.TempDir(), "storms.jsonl")
	exp, err := factory.CreateTraces(context.Background(), exportertest.NewNopSettings(component.MustNewType("storm_summary")), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	td := exampleTrace(t, readExampleAttempts(t))
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))
	return cfg.Path
}

func TestJSONReportOfTheExampleSummary(t *testing.T) {
	summary := exportExample(t)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, stormreport.Run([]string{"--json", summary}, &stdout, &stderr), stderr.String())

	var report struct {
		ToolEvents       int `json:"tool_events"`
		IncompleteEvents int `json:"incomplete_events"`
		Spans            int `json:"spans"`
		StormSpans       int `json:"storm_spans"`
		StatusFlipSpans  int `json:"status_flip_spans"`
		TopStorms        []struct {
			SpanID     string   `json:"span_id"`
			RunID      string   `json:"run_id"`
			ToolName   string   `json:"tool_name"`
			Attempts   int      `json:"attempts"`
			Statuses   []string `json:"statuses"`
			UniqueArgs int      `json:"unique_args"`
			MS         int64    `json:"ms"`
			IdemHash   string   `json:"idem_hash"`
		} `json:"top_storms"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &report))
	// The report a scan of the record gives: tool_events 3, incomplete_events 0, spans 1,
	// storm_spans 1, status_flip_spans 1.
	assert.Equal(t, 3, report.ToolEvents)
	assert.Equal(t, 0, report.IncompleteEvents)
	assert.Equal(t, 1, report.Spans)
	assert.Equal(t, 1, report.StormSpans)
	assert.Equal(t, 1, report.StatusFlipSpans)
	require.Len(t, report.TopStorms, 1)
	top := report.TopStorms[0]
	assert.Equal(t, "span_19", top.SpanID)
	assert.Equal(t, "run_7f3", top.RunID)
	assert.Equal(t, "charge_card", top.ToolName)
	assert.Equal(t, 3, top.Attempts)
	assert.Equal(t, []string{"timeout", "error", "ok"}, top.Statuses)
	assert.Equal(t, 1, top.UniqueArgs)
	assert.Equal(t, int64(7680), top.MS)
	assert.Equal(t, "e2b1aa44", top.IdemHash)
}

func TestHTMLPageOfTheExampleSummary(t *testing.T) {
	summary := exportExample(t)
	page := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, stormreport.Run([]string{summary, "--html", page}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "1 recorded calls from 1 files: 1 storms, 1 status flips, 3 attempts (2 failed), 1,650 tokens on failed attempts")

	info, err := os.Stat(page)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	raw, err := os.ReadFile(page)
	require.NoError(t, err)
	doc, err := html.Parse(bytes.NewReader(raw))
	require.NoError(t, err)
	timelines, bars := 0, 0
	for node := range doc.Descendants() {
		for _, a := range node.Attr {
			if a.Key == "data-role" && a.Val == "storm-timeline" {
				timelines++
			}
			if a.Key == "data-role" && a.Val == "attempt-bar" {
				bars++
			}
		}
	}
	assert.Equal(t, 1, timelines)
	assert.Equal(t, 3, bars)
	for _, label := range []string{"4.00 s · timeout", "1.90 s · error", "1.60 s · ok"} {
		assert.Contains(t, string(raw), label)
	}
}

func TestArguments(t *testing.T) {
	summary := exportExample(t)
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{name: "no files", args: []string{"--json"}, code: 2, inStderr: "no summary files given"},
		{name: "negative top", args: []string{"--top", "-1", summary}, code: 2, inStderr: "--top must not be negative"},
		{name: "unknown flag", args: []string{"--yaml", summary}, code: 2, inStderr: "flag provided but not defined"},
		{name: "missing file", args: []string{summary + ".nope"}, code: 1, inStderr: "find summary file"},
		{name: "help", args: []string{"--help"}, code: 0, inStderr: "usage: stormreport"},
		{name: "flags after files", args: []string{summary, "--top", "1", "--json"}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tt.code, stormreport.Run(tt.args, &stdout, &stderr), stderr.String())
			assert.True(t, strings.Contains(stderr.String(), tt.inStderr), "stderr %q lacks %q", stderr.String(), tt.inStderr)
		})
	}
}
