package stormreport

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func TestFormatDuration(t *testing.T) {
	tests := map[int64]string{0: "0 ms", 820: "820 ms", 1000: "1.00 s", 7680: "7.68 s", 12_500: "12.5 s", 125_000: "2m05s"}
	for ms, want := range tests {
		assert.Equal(t, want, FormatDuration(ms), "%d ms", ms)
	}
}

func TestGroupThousands(t *testing.T) {
	tests := map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"}
	for n, want := range tests {
		assert.Equal(t, want, groupThousands(n))
	}
}

func TestWriteText(t *testing.T) {
	records := []stormrecord.Record{withFailedTokens(storm("span_19", "charge_card", "transient_dependency", "timeout", "error", "ok"), ptr(int64(1602)), ptr(int64(48)))}
	var out bytes.Buffer
	require.NoError(t, WriteText(&out, &Input{Files: []string{"storms.jsonl"}, Records: records, SkippedLines: 2}, Build(records, 20)))
	text := out.String()
	for _, want := range []string{
		"1 recorded calls from 1 files: 1 storms, 0 status flips, 3 attempts (2 failed), 1,650 tokens on failed attempts",
		"skipped 2 lines",
		"Top storms by attempts",
		"charge_card", "span_19", "timeout,error,ok", "3.00 s", "transient_dependency",
		"Findings by kind", "Calls by tool",
	} {
		assert.Contains(t, text, want)
	}
}

func TestWriteJSONKeepsTheScannerShape(t *testing.T) {
	records := []stormrecord.Record{storm("span_19", "charge_card", "transient_dependency", "timeout", "error", "ok")}
	var out bytes.Buffer
	require.NoError(t, WriteJSON(&out, Build(records, 20)))
	var report map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &report))
	for _, key := range []string{"tool_events", "incomplete_events", "spans", "storm_spans", "status_flip_spans", "top_storms"} {
		assert.Contains(t, report, key)
	}
	row := report["top_storms"].([]any)[0].(map[string]any)
	for _, key := range []string{"span_id", "run_id", "tool_name", "attempts", "statuses", "unique_args", "ms", "idem_hash"} {
		assert.Contains(t, row, key)
	}
	assert.Nil(t, row["idem_hash"], "unknown stays null")
}

func TestShortHash(t *testing.T) {
	assert.Equal(t, "e2b1aa44", shortHash("e2b1aa44"))
	assert.Equal(t, "2042fa6871c6…", shortHash("2042fa6871c60ee42e57d887823a098c656e674b08eb31e39a1e5885ba187a85"))
}

func TestPartialRecordsAreMarkedInTextAndJSON(t *testing.T) {
	part := storm("span_7", "charge_card", "transient_dependency", "error", "ok")
	part.Partial = true
	records := []stormrecord.Record{part, storm("span_8", "lookup", "transient_dependency", "error", "ok")}
	report := Build(records, 20)
	var text bytes.Buffer
	require.NoError(t, WriteText(&text, &Input{Files: []string{"storms.jsonl"}, Records: records}, report))
	assert.Contains(t, text.String(), "transient_dependency (partial trace)", "the partial record is marked")
	assert.Equal(t, 1, bytes.Count(text.Bytes(), []byte("(partial trace)")), "only the partial record is marked")
	var out bytes.Buffer
	require.NoError(t, WriteJSON(&out, report))
	var back struct {
		TopStorms []map[string]any `json:"top_storms"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	partial := 0
	for _, row := range back.TopStorms {
		if row["partial"] == true {
			partial++
			assert.Equal(t, "span_7", row["span_id"])
		}
	}
	assert.Equal(t, 1, partial)
}
