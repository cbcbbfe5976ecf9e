//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// summaryFile is the storm_summary file as read back, line by line: every line must be a
// whole record.
type summaryFile struct {
	// records are the storm records (retrystorm.storm/v1, or a line of another schema that
	// checkSummaries then reports), one per line, in file order.
	records []stormrecord.Record
	// findings are the finding records (retrystorm.finding/v1).
	findings []stormrecord.FindingRecord
	raw      []byte
	byID     map[string]int // line count per record id, of both schemas
}

// readSummaryFile reads path (missing = empty) and reports a partial or broken line.
func readSummaryFile(t *testing.T, path string) summaryFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return summaryFile{byID: map[string]int{}}
	}
	if err != nil {
		t.Fatalf("read storm summary file: %v", err)
	}
	f := summaryFile{raw: raw, byID: map[string]int{}}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		t.Errorf("the summary file ends in a partial line: %q", tail(string(raw), 1))
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var head struct {
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err == nil && head.Schema == stormrecord.FindingSchema {
			var r stormrecord.FindingRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == "" {
				t.Errorf("summary line %d is not a whole finding record (%v): %.200s", n, err, sc.Text())
				continue
			}
			f.findings = append(f.findings, r)
			f.byID[r.ID]++
			continue
		}
		var r stormrecord.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == "" {
			t.Errorf("summary line %d is not a whole record (%v): %.200s", n, err, sc.Text())
			continue
		}
		f.records = append(f.records, r)
		f.byID[r.ID]++
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan storm summary file: %v", err)
	}
	return f
}

// readSummaryFileMust is readSummaryFile for a file the collector must have written.
func readSummaryFileMust(t *testing.T, path string) summaryFile {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("read storm summary file: %v", err)
	}
	return readSummaryFile(t, path)
}

// latest returns the storm records a reader sees: of the lines of one id (a trace decided
// in two parts, a finding found after its trace was forwarded) the most complete, in the
// place of the first. Each later line of an id must be more complete than the one before
// it, which is when storm_summary writes one.
func (f summaryFile) latest(t *testing.T) []stormrecord.Record {
	t.Helper()
	var out []stormrecord.Record
	at := map[string]int{}
	for _, r := range f.records {
		i, seen := at[r.ID]
		switch {
		case !seen:
			at[r.ID] = len(out)
			out = append(out, r)
		case r.Completeness().Beats(out[i].Completeness()):
			out[i] = r
		default:
			t.Errorf("record %s (trace %s, call %s) written again though no more complete: %+v after %+v",
				r.ID, r.TraceID, r.CallKey, r.Completeness(), out[i].Completeness())
		}
	}
	return out
}

// count is the number of records of both schemas.
func (f summaryFile) count() int { return len(f.records) + len(f.findings) }

// duplicates lists record ids written more than once.
func (f summaryFile) duplicates() []string {
	var out []string
	for id, n := range f.byID {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", id, n))
		}
	}
	return out
}

// recordsOf returns the records of one trace.
func (f summaryFile) recordsOf(traceID string) []stormrecord.Record {
	var out []stormrecord.Record
	for _, r := range f.records {
		if r.TraceID == traceID {
			out = append(out, r)
		}
	}
	return out
}

// linesOf returns, as the file holds them, the lines whose record belongs to a trace keep
// accepts. A line whose trace id cannot be read goes with every selection, so a search for
// raw payloads in any selection never passes over it.
func (f summaryFile) linesOf(keep func(traceID string) bool) []byte {
	var out []byte
	for line := range bytes.Lines(f.raw) {
		var head struct {
			TraceID string `json:"trace_id"`
		}
		if json.Unmarshal(line, &head) != nil || head.TraceID == "" || keep(head.TraceID) {
			out = append(out, line...)
		}
	}
	return out
}

// waitForRecord polls the summary file until it holds a record of the trace.
func waitForRecord(t *testing.T, p *collectorProcess, path, traceID string, timeout time.Duration) []stormrecord.Record {
	t.Helper()
	var recs []stormrecord.Record
	eventually(t, timeout, "a summary record of trace "+traceID, func() (bool, string) {
		recs = readSummaryFile(t, path).recordsOf(traceID)
		if len(recs) == 0 {
			p.alive(t)
		}
		return len(recs) > 0, "none in the file"
	})
	return recs
}

// withoutTrace drops the records of the given traces (canaries the truth does not know).
func withoutTrace(records []stormrecord.Record, traceIDs ...string) []stormrecord.Record {
	var out []stormrecord.Record
	for _, r := range records {
		if !slices.Contains(traceIDs, r.TraceID) {
			out = append(out, r)
		}
	}
	return out
}

// expectedRecords lists the ids of the records the truth implies. A call without a call
// id gets a key the processor derives, so those are matched by attempt span ids instead:
// the second result lists them.
func expectedRecords(truth []agenttraffic.Truth) (ids map[string]string, bySpans map[string]string) {
	ids, bySpans = map[string]string{}, map[string]string{}
	for _, tr := range truth {
		for _, rec := range tr.Records {
			what := fmt.Sprintf("trace %s (%s, %s) call %s", tr.TraceID, tr.Scenario, tr.Shape, callName(rec))
			if rec.CallKey != "" {
				ids[stormrecord.RecordID(tr.TraceID, rec.CallKey)] = what
			} else {
				bySpans[tr.TraceID+"/"+strings.Join(rec.AttemptSpanIDs, ",")] = what
			}
		}
	}
	return ids, bySpans
}

// missingRecords lists the expected records the file lacks.
func missingRecords(truth []agenttraffic.Truth, f summaryFile) []string {
	ids, bySpans := expectedRecords(truth)
	have := map[string]bool{}
	for _, r := range f.records {
		have[r.TraceID+"/"+strings.Join(r.AttemptSpanIDs, ",")] = true
	}
	var out []string
	for id, what := range ids {
		if f.byID[id] == 0 {
			out = append(out, what)
		}
	}
	for key, what := range bySpans {
		if !have[key] {
			out = append(out, what)
		}
	}
	return out
}

// linesOf selects lines by trace id, keeps each line whole, and gives a line whose trace id
// cannot be read to every selection.
func TestSummaryLinesOf(t *testing.T) {
	f := summaryFile{raw: []byte(`{"trace_id":"a","x":1}` + "\n" + `{"trace_id":"b"}` + "\n" + `not json "a"` + "\n" + `{"trace_id":"a","x":2}` + "\n")}
	got := string(f.linesOf(func(id string) bool { return id == "a" }))
	want := `{"trace_id":"a","x":1}` + "\n" + `not json "a"` + "\n" + `{"trace_id":"a","x":2}` + "\n"
	if got != want {
		t.Errorf("lines of a: %q, want %q", got, want)
	}
	if got, want := string(f.linesOf(func(id string) bool { return id == "c" })), `not json "a"`+"\n"; got != want {
		t.Errorf("lines of c: %q, want %q", got, want)
	}
}
