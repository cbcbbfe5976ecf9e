package stormreport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func FuzzReadSummaryFile(f *testing.F) {
	f.Add([]byte(`{"schema":"retrystorm.storm/v1","id":"a","call_key":"k","storm":true,"attempts":2,"statuses":["error","ok"]}` + "\n"))
	f.Add([]byte("not json\n{\"schema\":\"retrystorm.storm/v1\"}\n\n"))
	f.Add([]byte(`{"schema":"retrystorm.storm/v1","id":"b","timeline":[{"start_ms_offset":-5,"duration_ms":-1,"status":"?"}]}`))
	f.Add([]byte(`{"schema":"retrystorm.finding/v1","id":"c","span_id":"s","findings":[{"kind":"unbacked_citation","detail":"<b>"}]}` + "\n" + `{"schema":"retrystorm.finding/v1","id":"d","findings":null}`))
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(t.TempDir(), "storms.jsonl")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		input, err := Read([]string{path})
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		for _, r := range input.Records {
			if r.ID == "" {
				t.Fatal("a record without id was read")
			}
		}
		for _, r := range input.Findings {
			if r.ID == "" {
				t.Fatal("a finding record without id was read")
			}
		}
		report := BuildFrom(input, 5)
		var out bytes.Buffer
		if err := WriteHTML(&out, input, report); err != nil {
			t.Fatalf("page: %v", err)
		}
		if err := WriteText(&out, input, report); err != nil {
			t.Fatalf("text: %v", err)
		}
	})
}
