package stormreport

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// truthFor is one trace's truth line: its storms by class and its findings.
func truthFor(traceID string, storms []string, findings ...string) truthTrace {
	tr := truthTrace{TraceID: traceID, Scenario: "test", Findings: findings}
	for _, class := range storms {
		tr.Records = append(tr.Records, struct {
			Storm bool   `json:"storm"`
			Class string `json:"class"`
		}{Storm: true, Class: class})
	}
	return tr
}

func stormIn(traceID, callKey, class string, findings ...string) stormrecord.Record {
	r := storm(callKey, "charge_card", class, "error", "ok")
	r.TraceID, r.ID = traceID, stormrecord.RecordID(traceID, callKey)
	for _, kind := range findings {
		r.Findings = append(r.Findings, stormrecord.Finding{Kind: kind})
	}
	return r
}

func TestCompareTruthMatch(t *testing.T) {
	truth := []truthTrace{
		truthFor("t1", []string{"exhausted"}, "unrecovered_failure"),
		truthFor("t2", nil, "unbacked_citation", "unbacked_citation"),
		truthFor("t3", nil), // clean
	}
	input := &Input{
		Records:  []stormrecord.Record{stormIn("t1", "c1", "exhausted", "unrecovered_failure")},
		Findings: []stormrecord.FindingRecord{citation("t2", "a1", "2025-09-09T02:40:09Z", "kb/a", "kb/b")},
	}
	c := CompareTruth(truth, input)
	assert.True(t, c.Match)
	assert.Equal(t, "ground truth: 3 findings injected, 3 recorded; 1 storms injected, 1 recorded — match", c.Line)
	assert.Equal(t, TruthCounts{Injected: 3, Recorded: 3}, c.Findings)
	assert.Equal(t, []TruthCount{
		{Kind: "unbacked_citation", Injected: 2, Recorded: 2, Matched: 2},
		{Kind: "unrecovered_failure", Injected: 1, Recorded: 1, Matched: 1},
	}, c.ByKind)
}

func TestCompareTruthSaysWhereItDiffers(t *testing.T) {
	truth := []truthTrace{
		truthFor("warm", nil),
		truthFor("stale1", []string{"transient_dependency"}, "stale_cache_suspect"),
		truthFor("stale2", []string{"transient_dependency"}, "stale_cache_suspect"),
		truthFor("cite", nil, "unbacked_citation"),
		truthFor("exh", []string{"exhausted", "exhausted"}),
	}
	input := &Input{Records: []stormrecord.Record{
		stormIn("stale1", "c1", "transient_dependency", "stale_cache_suspect"),
		stormIn("stale2", "c2", "transient_dependency"), // the stale read was missed
		stormIn("exh", "c3", "exhausted"),
		stormIn("exh", "c4", "changed_arguments"), // misclassified
		stormIn("warm", "c5", "", "result_drift"),
	}}
	c := CompareTruth(truth, input)
	assert.False(t, c.Match)
	assert.Equal(t, "ground truth: 3 findings injected, 2 recorded; 4 storms injected, 5 recorded — differ: "+
		"result_drift 1 recorded but none injected, stale_cache_suspect 1 of 2, unbacked_citation 0 of 1, "+
		"storm class changed_arguments 1 recorded but none injected, storm class exhausted 1 of 2, storm class unclassified 1 recorded but none injected",
		c.Line)
}

func TestCompareTruthHoldsFindingsToTheirTrace(t *testing.T) {
	truth := []truthTrace{truthFor("t1", nil, "unbacked_citation"), truthFor("t2", nil)}
	input := &Input{Findings: []stormrecord.FindingRecord{citation("t2", "a1", "2025-09-09T02:40:09Z", "kb/a")}}
	c := CompareTruth(truth, input)
	assert.False(t, c.Match, "a record in the wrong trace does not stand in for the missing one")
	assert.Equal(t, []TruthCount{{Kind: "unbacked_citation", Injected: 1, Recorded: 1, Unexpected: 1}}, c.ByKind)
	assert.True(t, strings.HasSuffix(c.Line, "differ: unbacked_citation 0 of 1 (+1 not injected)"), c.Line)
}

// TestReadTruthOfAgentsim reads the truth as agentsim writes it (one agenttraffic.Truth per
// line) and checks that every injected storm and finding is counted, the trace-level
// unbacked_citation included.
func TestReadTruthOfAgentsim(t *testing.T) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: 3, EveryScenario: true, Interval: time.Millisecond,
		Service: "agent", Base: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "truth.jsonl")
	var lines bytes.Buffer
	storms, findings, citations := 0, 0, 0
	for _, tr := range gen.Generate(40) {
		line, err := json.Marshal(&tr.Truth)
		require.NoError(t, err)
		lines.Write(append(line, '\n'))
		storms += tr.Truth.Storms
		findings += len(tr.Truth.Findings)
		for _, f := range tr.Truth.Findings {
			if f == agenttraffic.FindingUnbackedCitation {
				citations++
			}
		}
	}
	require.NoError(t, os.WriteFile(path, lines.Bytes(), 0o600))
	require.Positive(t, citations, "every scenario includes an unbacked citation")

	truth, err := ReadTruth(path)
	require.NoError(t, err)
	require.Len(t, truth, 40)
	c := CompareTruth(truth, &Input{})
	assert.Equal(t, TruthCounts{Injected: storms}, c.Storms)
	assert.Equal(t, TruthCounts{Injected: findings}, c.Findings)
	assert.False(t, c.Match)
}

func TestReadTruthErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadTruth(filepath.Join(dir, "missing.jsonl"))
	assert.ErrorContains(t, err, "open ground truth")
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{\"trace_id\":\"a\",\"scenario\":\"clean\"}\nnot json\n"), 0o600))
	_, err = ReadTruth(bad)
	assert.ErrorContains(t, err, "line 2")
	summary := filepath.Join(dir, "storms.jsonl")
	writeJSONL(t, summary, false, storm("c", "t", "exhausted", "error", "error"))
	_, err = ReadTruth(summary)
	assert.ErrorContains(t, err, "not agentsim's --truth output", "a summary file given as truth is refused")
}
