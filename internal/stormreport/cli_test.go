package stormreport

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunWithTruthEndsWithTheComparison(t *testing.T) {
	dir := t.TempDir()
	summary := filepath.Join(dir, "storms.jsonl")
	writeJSONL(t, summary, false,
		stormIn("t1", "c1", "exhausted", "unrecovered_failure"),
		citation("t2", "a1", "2025-09-09T02:40:09Z", "kb/refunds"),
	)
	matching := filepath.Join(dir, "truth.jsonl")
	writeJSONL(t, matching, false,
		truthFor("t1", []string{"exhausted"}, "unrecovered_failure"),
		truthFor("t2", nil, "unbacked_citation"),
		truthFor("t3", nil),
	)
	missed := filepath.Join(dir, "missed.jsonl")
	writeJSONL(t, missed, false,
		truthFor("t1", []string{"exhausted"}, "unrecovered_failure", "stale_cache_suspect"),
		truthFor("t2", nil, "unbacked_citation"),
	)

	tests := []struct {
		truth, last string
	}{
		{matching, "ground truth: 2 findings injected, 2 recorded; 1 storms injected, 1 recorded — match"},
		{missed, "ground truth: 3 findings injected, 2 recorded; 1 storms injected, 1 recorded — differ: stale_cache_suspect 0 of 1"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, Run([]string{"--truth", tt.truth, summary}, &stdout, &stderr), stderr.String())
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		assert.Equal(t, tt.last, lines[len(lines)-1], "the text report ends with the comparison")

		stdout.Reset()
		require.Equal(t, 0, Run([]string{"--json", "--truth", tt.truth, summary}, &stdout, &stderr), stderr.String())
		var report struct {
			Truth TruthComparison `json:"truth"`
		}
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &report))
		assert.Equal(t, tt.last, report.Truth.Line)
	}

	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, Run([]string{"--truth", filepath.Join(dir, "nope.jsonl"), summary}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "open ground truth")
}
