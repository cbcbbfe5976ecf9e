package stormreport

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func TestResolveFilesBringsBackupsAlong(t *testing.T) {
	dir := t.TempDir()
	current := filepath.Join(dir, "storms.jsonl")
	older := filepath.Join(dir, "storms-2025-09-09T02-00-00.000.jsonl.gz")
	newer := filepath.Join(dir, "storms-2025-09-10T02-00-00.000.jsonl")
	compressing := filepath.Join(dir, "storms-2025-09-10T02-00-00.000.jsonl.gz") // gzip still running
	unrelated := filepath.Join(dir, "storms-notes.jsonl")
	for _, f := range []string{current, older, newer, compressing, unrelated} {
		require.NoError(t, os.WriteFile(f, nil, 0o600))
	}

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "current file", args: []string{current}, want: []string{older, newer, current}},
		{name: "glob", args: []string{filepath.Join(dir, "storms*.jsonl*")}, want: []string{older, newer, unrelated, current}},
		{name: "named twice", args: []string{current, newer, current}, want: []string{older, newer, current}},
		{name: "one backup", args: []string{older}, want: []string{older}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveFiles(tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestResolveFilesErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := ResolveFiles([]string{filepath.Join(dir, "missing.jsonl")})
	assert.ErrorContains(t, err, "find summary file")
	_, err = ResolveFiles([]string{filepath.Join(dir, "*.jsonl")})
	assert.ErrorContains(t, err, "no summary files match")
	_, err = ResolveFiles([]string{dir})
	assert.ErrorContains(t, err, "is a directory")
}

func TestReadAcrossPlainAndCompressedFiles(t *testing.T) {
	dir := t.TempDir()
	a := storm("a", "charge_card", "exhausted", "error", "error")
	b := storm("b", "charge_card", "exhausted", "error", "error")
	c := storm("c", "search", "transient_dependency", "error", "ok")
	backup := filepath.Join(dir, "storms-2025-09-09T02-00-00.000.jsonl.gz")
	current := filepath.Join(dir, "storms.jsonl")
	writeJSONL(t, backup, true, a, b)
	writeJSONL(t, current, false,
		c,
		a, // the same id again: read once
		`{"schema":"retrystorm.storm/v1","id":"broken`,
		`{"schema":"other/v2","id":"x"}`,
		`{"schema":"retrystorm.storm/v1"}`,
		"",
	)

	files, err := ResolveFiles([]string{current})
	require.NoError(t, err)
	input, err := Read(files)
	require.NoError(t, err)
	var keys []string
	for _, r := range input.Records {
		keys = append(keys, r.CallKey)
	}
	assert.Equal(t, []string{"a", "b", "c"}, keys)
	assert.Equal(t, 3, input.SkippedLines)
	assert.Equal(t, 1, input.Duplicates)
	assert.Equal(t, []string{backup, current}, input.Files)
}

func TestReadFailsOnACorruptArchive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storms-2025-09-09T02-00-00.000.jsonl.gz")
	require.NoError(t, os.WriteFile(path, []byte("not gzip"), 0o600))
	_, err := Read([]string{path})
	assert.ErrorContains(t, err, "open compressed summary file")
}

// TestReadTakesTheMostCompleteRecordOfAnID: the lines of one id — the two parts of a trace
// decided twice, a later revision with a finding found after the trace was forwarded —
// are read as the most complete of them, in the place the id was first read; a line of
// another schema with the same id is a record of its own.
func TestReadTakesTheMostCompleteRecordOfAnID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storms.jsonl")
	whole := storm("a", "search", "transient_dependency", "error", "error", "ok")
	firstPart := storm("a", "search", "", "error")
	firstPart.Storm = false
	revised := whole
	revised.Revision = 2
	revised.Findings = []stormrecord.Finding{{Kind: "stale_cache_suspect", Detail: "found after the trace was forwarded"}}
	other := storm("b", "fetch", "exhausted", "error", "error")
	answer := citation("t1", "a1", "2025-09-09T02:40:09Z", "kb/refunds")
	answer.ID = whole.ID // a hand-made clash across schemas
	writeJSONL(t, path, false, firstPart, other, whole, answer, firstPart, revised, whole)

	input, err := Read([]string{path})
	require.NoError(t, err)
	require.Len(t, input.Records, 2)
	assert.Equal(t, revised, input.Records[0], "the latest revision of the whole call")
	assert.Equal(t, other, input.Records[1])
	require.Len(t, input.Findings, 1)
	assert.Equal(t, 4, input.Duplicates, "every line of an id but the one kept")
}
