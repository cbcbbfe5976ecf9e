package stormsummaryexporter

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzPreloadIDs feeds arbitrary summary-file contents (the current file and, optionally, a
// compressed backup) to the id preloading a restarted exporter does. Whatever a crash, a disk
// error or a hand edit left in the files, preloading must not fail, must return only ids of
// whole lines, and, with a budget covering the file, must find the id of every whole line.
func FuzzPreloadIDs(f *testing.F) {
	f.Add([]byte("{\"id\":\"a\"}\n{\"id\":\"b\"}\n"), int64(4<<20), false)
	f.Add([]byte("{\"id\":\"a\"}\n{\"id\":\"b\""), int64(12), true)
	f.Add([]byte("\n\n{\"id\":\"\"}\r\nnot json\n{\"id\":7}\n"), int64(-1), false)
	f.Fuzz(func(t *testing.T, content []byte, budget int64, backup bool) {
		path := filepath.Join(t.TempDir(), "storms.jsonl")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		possible := wholeLineIDs(content)
		if backup {
			var gz bytes.Buffer
			w := gzip.NewWriter(&gz)
			_, _ = w.Write(content)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(filepath.Dir(path), "storms-2026-01-02T15-04-05.000.jsonl.gz")
			if err := os.WriteFile(name, gz.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		lines, err := preloadIDs(path, budget)
		if err != nil {
			t.Fatalf("preload ids: %v", err)
		}
		var ids []string
		for _, l := range lines {
			ids = append(ids, l.id)
		}
		for _, id := range ids {
			if !slices.Contains(possible, id) {
				t.Fatalf("preloaded id %q is not the id of a whole line of %q", id, content)
			}
		}
		if !backup && budget > int64(len(content)) && !slices.Equal(ids, possible) {
			t.Fatalf("budget %d covers the %d-byte file: preloaded %q, want %q", budget, len(content), ids, possible)
		}
	})
}

// wholeLineIDs is the oracle: the ids of the newline-terminated lines that are JSON
// objects with a non-empty string id.
func wholeLineIDs(content []byte) []string {
	var ids []string
	for len(content) > 0 {
		i := bytes.IndexByte(content, '\n')
		if i < 0 {
			break
		}
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(content[:i+1], &head) == nil && head.ID != "" {
			ids = append(ids, head.ID)
		}
		content = content[i+1:]
	}
	return ids
}
