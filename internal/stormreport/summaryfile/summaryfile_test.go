package summaryfile

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackupsOldestFirstIgnoringLookalikes(t *testing.T) {
	dir := t.TempDir()
	names := []string{
		"storms.jsonl",
		"storms-2025-09-10T02-00-00.000.jsonl",
		"storms-2025-09-09T02-00-00.000.jsonl.gz",
		"storms-2025-09-11T02-00-00.000.jsonl.gz",
		"storms-notes.jsonl",                       // not a timestamp
		"storms-2025-09-12T02-00-00.000.txt",       // another extension
		"other-2025-09-12T02-00-00.000.jsonl",      // another file's backup
		"storms-2025-09-13T02-00-00.000.jsonl.gz~", // not a backup suffix
	}
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	got, err := Backups(filepath.Join(dir, "storms.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, []string{
		filepath.Join(dir, "storms-2025-09-09T02-00-00.000.jsonl.gz"),
		filepath.Join(dir, "storms-2025-09-10T02-00-00.000.jsonl"),
		filepath.Join(dir, "storms-2025-09-11T02-00-00.000.jsonl.gz"),
	}, got)

	none, err := Backups(filepath.Join(dir, "missing", "storms.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestTailKeepsWholeLinesOnly(t *testing.T) {
	content := "first line\nsecond\nthird line\npartial"
	tests := []struct {
		name   string
		budget int64
		want   string
	}{
		{name: "whole file", budget: 1 << 20, want: "first line\nsecond\nthird line\n"},
		{name: "window starts at a line", budget: int64(len("second\nthird line\npartial")), want: "second\nthird line\n"},
		{name: "window cuts a line", budget: int64(len("cond\nthird line\npartial")), want: "third line\n"},
		{name: "window inside the last line", budget: 3, want: ""},
		{name: "no budget", budget: 0, want: ""},
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "storms.jsonl")
	require.NoError(t, os.WriteFile(plain, []byte(content), 0o600))
	compressed := filepath.Join(dir, "storms-2025-09-09T02-00-00.000.jsonl.gz")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(compressed, gz.Bytes(), 0o600))

	for _, tt := range tests {
		for _, path := range []string{plain, compressed} {
			t.Run(tt.name+"/"+filepath.Ext(path), func(t *testing.T) {
				got, err := Tail(path, tt.budget)
				require.NoError(t, err)
				assert.Equal(t, tt.want, string(got))
			})
		}
	}
}

func TestTailOfALargeCompressedFile(t *testing.T) {
	var content strings.Builder
	for i := range 50_000 {
		content.WriteString(strings.Repeat("x", i%50) + "\n")
	}
	content.WriteString("last\n")
	path := filepath.Join(t.TempDir(), "storms-2025-09-09T02-00-00.000.jsonl.gz")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(content.String()))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, gz.Bytes(), 0o600))

	got, err := Tail(path, 100)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(got), "\nlast\n"))
	assert.LessOrEqual(t, len(got), 100)
	assert.True(t, strings.HasSuffix(content.String(), string(got)))
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.jsonl"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
