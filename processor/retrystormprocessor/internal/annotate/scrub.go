package annotate

import (
	"encoding/json"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
)

// Scrubber replaces the payload values it hunts in s and says how many it replaced
// (redact.Values.Scrub).
type Scrubber func(s string) (string, int)

// ScrubRecords scrubs the free text that the records and finding events Apply wrote
// copied from spans: a finding's detail (which quotes span names and asset names) and a
// finding record's span_name. Redaction leaves retry_storm's own annotations alone, so without this a span
// name or an answer quoting a payload would reach the summary file through its record.
// Identifiers (trace, span, run ids, call keys), hashes and tool names are not touched:
// readers join on them, and redaction never hunts a trace's tool names. A record that
// changed is written to its span again. It returns the number of values replaced.
func ScrubRecords(tr *analysis.Trace, scrub Scrubber) int {
	total := 0
	for _, u := range tr.Units {
		if u.Record == nil {
			continue
		}
		if n := scrubFindings(u.Record.Findings, scrub); n > 0 {
			total += n
			putRecord(u.Last().Span, stormrecord.AttrCallSummary, u.Record)
		}
	}
	for _, sf := range tr.FindingRecords {
		n := scrubFindings(sf.Record.Findings, scrub)
		name, m := scrub(sf.Record.SpanName)
		sf.Record.SpanName = name
		if n+m > 0 {
			total += n + m
			putRecord(sf.Span, stormrecord.AttrFindingSummary, sf.Record)
		}
	}
	done := map[ptrace.Span]bool{}
	for _, f := range tr.Findings {
		if !done[f.Span] {
			done[f.Span] = true
			total += scrubFindingEvents(f.Span, scrub)
		}
	}
	return total
}

// scrubFindingEvents scrubs the detail of the span's retrystorm.finding events.
func scrubFindingEvents(span ptrace.Span, scrub Scrubber) int {
	total := 0
	for _, ev := range span.Events().All() {
		if ev.Name() != stormrecord.FindingEvent {
			continue
		}
		if v, ok := ev.Attributes().Get(stormrecord.FindingDetail); ok {
			if detail, n := scrub(v.Str()); n > 0 {
				v.SetStr(detail)
				total += n
			}
		}
	}
	return total
}

func scrubFindings(fs []stormrecord.Finding, scrub Scrubber) int {
	total := 0
	for i := range fs {
		detail, n := scrub(fs[i].Detail)
		fs[i].Detail = detail
		total += n
	}
	return total
}

// putRecord writes a record's JSON to the attribute that carries it.
func putRecord(span ptrace.Span, key string, record any) {
	if b, err := json.Marshal(record); err == nil {
		span.Attributes().PutStr(key, string(b))
	}
}
