package stormreport // import "github.com/retrystorm/retrystorm/internal/stormreport"

import (
	"cmp"
	"slices"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// statusOK is the normalised status of a successful attempt.
const statusOK = "ok"

// Report is the aggregate of summary records. Its first fields keep the shape of the
// per-attempt retry storm scanner's report (a call is what the scanner calls a span); the rest adds
// what the summary records know beyond it.
type Report struct {
	// ToolEvents counts tool attempts across the recorded calls.
	ToolEvents int `json:"tool_events"`
	// IncompleteEvents counts attempts that lacked a field (untrusted for cost analysis).
	IncompleteEvents int `json:"incomplete_events"`
	// Spans counts recorded logical calls.
	Spans           int        `json:"spans"`
	StormSpans      int        `json:"storm_spans"`
	StatusFlipSpans int        `json:"status_flip_spans"`
	TopStorms       []StormRow `json:"top_storms"`

	// TopFailedTokenStorms ranks storms by tokens spent on attempts that did not succeed.
	TopFailedTokenStorms []StormRow `json:"top_failed_token_storms"`
	FailedAttempts       int        `json:"failed_attempts"`
	// FailedTokens sums failed_tokens_in + failed_tokens_out where known; null when no
	// record knows them.
	FailedTokens *int64       `json:"failed_tokens"`
	ByClass      []ClassTotal `json:"by_class"`
	// ByFinding counts every finding, those of the finding records included.
	ByFinding []FindingTotal `json:"by_finding"`
	ByTool    []ToolTotal    `json:"by_tool"`

	// TraceFindingRecords counts the finding records: spans with findings that belong to
	// no call (unbacked_citation on an answer).
	TraceFindingRecords int `json:"trace_finding_records"`
	// TraceLevelFindings counts the findings those records list.
	TraceLevelFindings int `json:"trace_level_findings"`
	// TraceFindings lists the finding records, newest first, bounded like the rankings.
	TraceFindings []TraceFindingRow `json:"trace_findings"`
	// Truth holds the report to agentsim's ground truth, when one was given.
	Truth *TruthComparison `json:"truth,omitempty"`
	// Scan says what `stormreport scan` read and decided, when the records came from it.
	Scan *ScanSummary `json:"scan,omitempty"`
}

// ScanSummary is what `stormreport scan` read to make the records of a report, and what it
// could not read or had to decide early.
type ScanSummary struct {
	// Files counts the inputs read (stdin counts as one); Unreadable those that could not
	// be opened or recognised.
	Files      int `json:"files"`
	Unreadable int `json:"unreadable_files"`
	// Bytes counts the bytes read from the inputs, as stored (compressed ones compressed).
	Bytes int64 `json:"bytes"`
	// Spans counts the spans handed to the analysis; LoggedAttempts the per-attempt
	// JSONL tool_attempt lines among them (one span each). Its JSON key keeps the format's
	// old name, seed_attempts, so that readers of --json are not broken.
	Spans          int64 `json:"spans"`
	LoggedAttempts int64 `json:"seed_attempts"`
	// SkippedLines counts parsed lines that are neither traces nor tool attempts (the
	// per-attempt format's other events); BadLines the lines or messages that were not read: they did not
	// parse, or, counted again in Oversized, were over MaxMessageBytes.
	SkippedLines int64 `json:"skipped_lines"`
	BadLines     int64 `json:"bad_lines"`
	Oversized    int64 `json:"oversized"`
	// Traces counts the traces decided, by decision (kept, dropped).
	Traces map[string]int64 `json:"traces"`
	// EarlyDecisions counts traces decided before the input ended because the memory bound
	// (max_buffered_bytes) or max_trace_bytes was reached, by cause: they were judged on the
	// spans read by then.
	EarlyDecisions map[string]int64 `json:"early_decisions"`
	// LateSpans counts spans that came after their trace was decided for good: they
	// followed the decision and were not analysed.
	LateSpans int64 `json:"late_spans"`
	// MaxBufferedBytes is the memory bound the scan ran with; MaxMessageBytes the bound of
	// one line, document or protobuf message.
	MaxBufferedBytes int64 `json:"max_buffered_bytes"`
	MaxMessageBytes  int64 `json:"max_message_bytes"`
}

// TraceFindingRow is one finding record: the span its findings concern and the findings.
type TraceFindingRow struct {
	ID          string                `json:"id"`
	Time        string                `json:"time"`
	TraceID     string                `json:"trace_id"`
	RunID       *string               `json:"run_id"`
	ServiceName *string               `json:"service_name"`
	SpanID      string                `json:"span_id"`
	SpanName    string                `json:"span_name"`
	Findings    []stormrecord.Finding `json:"findings"`
	TraceURL    *string               `json:"trace_url,omitempty"`
}

// StormRow is one storm in a ranking; span_id is the call key, as in the scanner.
type StormRow struct {
	SpanID     string   `json:"span_id"`
	RunID      *string  `json:"run_id"`
	ToolName   string   `json:"tool_name"`
	Attempts   int      `json:"attempts"`
	Statuses   []string `json:"statuses"`
	UniqueArgs int      `json:"unique_args"`
	MS         int64    `json:"ms"`
	IdemHash   *string  `json:"idem_hash"`

	ID           string  `json:"id"`
	TraceID      string  `json:"trace_id"`
	Class        *string `json:"class"`
	FailedTokens *int64  `json:"failed_tokens"`
	TraceURL     *string `json:"trace_url,omitempty"`
	// Partial: the record covers part of its trace (retry_storm decided the trace
	// provisionally and analysed its rest).
	Partial bool `json:"partial,omitempty"`
}

// ClassTotal sums the storms of one class.
type ClassTotal struct {
	Class        string `json:"class"`
	Storms       int    `json:"storms"`
	Attempts     int    `json:"attempts"`
	FailedTokens *int64 `json:"failed_tokens"`
}

// FindingTotal counts the findings of one kind, the calls carrying them and the finding
// records (spans) carrying them.
type FindingTotal struct {
	Kind         string `json:"kind"`
	Findings     int    `json:"findings"`
	Calls        int    `json:"calls"`
	TraceRecords int    `json:"trace_records"`
}

// ToolTotal sums the recorded calls of one tool.
type ToolTotal struct {
	Tool           string `json:"tool"`
	Calls          int    `json:"calls"`
	Storms         int    `json:"storms"`
	Attempts       int    `json:"attempts"`
	FailedAttempts int    `json:"failed_attempts"`
	FailedTokens   *int64 `json:"failed_tokens"`
}

// unclassified names the class of a storm whose record has none.
const unclassified = "unclassified"

// BuildFrom aggregates everything read: the storm records and the finding records; top
// bounds each ranking and the list of finding records (0 or less keeps them all).
func BuildFrom(input *Input, top int) Report {
	return build(input.Records, input.Findings, top)
}

// Build aggregates storm records; top bounds each ranking (0 or less keeps every storm).
func Build(records []stormrecord.Record, top int) Report {
	return build(records, nil, top)
}

func build(records []stormrecord.Record, traceFindings []stormrecord.FindingRecord, top int) Report {
	agg := aggregate{
		classes:  map[string]*ClassTotal{},
		findings: map[string]*FindingTotal{},
		tools:    map[string]*ToolTotal{},
	}
	for i := range records {
		agg.add(&records[i])
	}
	for i := range traceFindings {
		agg.addTraceFindings(&traceFindings[i])
	}
	report := agg.report
	report.TraceFindings = listTraceFindings(agg.traceFindings, top)
	report.TopStorms = rankByAttempts(agg.storms, top)
	report.TopFailedTokenStorms = rankByFailedTokens(agg.storms, top)
	report.ByClass = sortedTotals(agg.classes, func(a, b *ClassTotal) int {
		return cmp.Or(cmp.Compare(b.Storms, a.Storms), cmp.Compare(a.Class, b.Class))
	})
	report.ByFinding = sortedTotals(agg.findings, func(a, b *FindingTotal) int {
		return cmp.Or(cmp.Compare(b.Findings, a.Findings), cmp.Compare(a.Kind, b.Kind))
	})
	report.ByTool = sortedTotals(agg.tools, func(a, b *ToolTotal) int {
		return cmp.Or(cmp.Compare(b.Attempts, a.Attempts), cmp.Compare(a.Tool, b.Tool))
	})
	return report
}

// aggregate accumulates the report while the records are walked once.
type aggregate struct {
	report   Report
	classes  map[string]*ClassTotal
	findings map[string]*FindingTotal
	tools    map[string]*ToolTotal
	storms   []StormRow
	// traceFindings are the rows of the finding records.
	traceFindings []TraceFindingRow
}

func (a *aggregate) add(r *stormrecord.Record) {
	failed := failedAttempts(r)
	tokens := FailedTokens(r)
	a.report.Spans++
	a.report.ToolEvents += r.Attempts
	a.report.IncompleteEvents += r.IncompleteAttempts
	a.report.FailedAttempts += failed
	a.report.FailedTokens = addKnown(a.report.FailedTokens, tokens)
	if r.StatusFlip {
		a.report.StatusFlipSpans++
	}
	tool := entry(a.tools, r.ToolName, func() *ToolTotal { return &ToolTotal{Tool: r.ToolName} })
	tool.Calls++
	tool.Attempts += r.Attempts
	tool.FailedAttempts += failed
	tool.FailedTokens = addKnown(tool.FailedTokens, tokens)
	for _, total := range countFindings(a.findings, r.Findings) {
		total.Calls++
	}
	if !r.Storm {
		return
	}
	a.report.StormSpans++
	tool.Storms++
	name := ClassName(r)
	class := entry(a.classes, name, func() *ClassTotal { return &ClassTotal{Class: name} })
	class.Storms++
	class.Attempts += r.Attempts
	class.FailedTokens = addKnown(class.FailedTokens, tokens)
	a.storms = append(a.storms, NewStormRow(r))
}

// ClassName is the record's storm class, or "unclassified" when it has none.
func ClassName(r *stormrecord.Record) string {
	if r.Class != nil && *r.Class != "" {
		return *r.Class
	}
	return unclassified
}

// NewStormRow is the ranking row of a record.
func NewStormRow(r *stormrecord.Record) StormRow {
	statuses := r.Statuses
	if statuses == nil {
		statuses = []string{}
	}
	return StormRow{
		SpanID: r.CallKey, RunID: r.RunID, ToolName: r.ToolName, Attempts: r.Attempts,
		Statuses: statuses, UniqueArgs: r.UniqueArgs, MS: r.MS, IdemHash: r.IdemHash,
		ID: r.ID, TraceID: r.TraceID, Class: r.Class, FailedTokens: FailedTokens(r), TraceURL: r.TraceURL,
		Partial: r.Partial,
	}
}

func failedAttempts(r *stormrecord.Record) int {
	failed := 0
	for _, status := range r.Statuses {
		if status != statusOK {
			failed++
		}
	}
	return failed
}

// FailedTokens is failed_tokens_in + failed_tokens_out, counting the halves that are
// known; nil when neither is.
func FailedTokens(r *stormrecord.Record) *int64 {
	return addKnown(addKnown(nil, r.FailedTokensIn), r.FailedTokensOut)
}

// addKnown adds b to a, treating nil as unknown rather than zero.
func addKnown(a, b *int64) *int64 {
	switch {
	case b == nil:
		return a
	case a == nil:
		sum := *b
		return &sum
	default:
		sum := *a + *b
		return &sum
	}
}

// addTraceFindings counts a finding record: its findings, and the record once per kind.
func (a *aggregate) addTraceFindings(r *stormrecord.FindingRecord) {
	a.report.TraceFindingRecords++
	a.report.TraceLevelFindings += len(r.Findings)
	for _, total := range countFindings(a.findings, r.Findings) {
		total.TraceRecords++
	}
	findings := r.Findings
	if findings == nil {
		findings = []stormrecord.Finding{}
	}
	a.traceFindings = append(a.traceFindings, TraceFindingRow{
		ID: r.ID, Time: r.Time, TraceID: r.TraceID, RunID: r.RunID, ServiceName: r.ServiceName,
		SpanID: r.SpanID, SpanName: r.SpanName, Findings: findings, TraceURL: r.TraceURL,
	})
}

// countFindings adds each finding to its kind's total and returns the totals of the kinds
// present, once each, for the caller to count what carried them.
func countFindings(totals map[string]*FindingTotal, findings []stormrecord.Finding) []*FindingTotal {
	var kinds []*FindingTotal
	for _, f := range findings {
		total := entry(totals, f.Kind, func() *FindingTotal { return &FindingTotal{Kind: f.Kind} })
		if !slices.Contains(kinds, total) {
			kinds = append(kinds, total)
		}
		total.Findings++
	}
	return kinds
}

// listTraceFindings orders the finding records newest first (then by id, so equal times
// keep a stable order) and keeps top of them.
func listTraceFindings(rows []TraceFindingRow, top int) []TraceFindingRow {
	if rows == nil {
		return []TraceFindingRow{}
	}
	slices.SortStableFunc(rows, func(a, b TraceFindingRow) int {
		return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.ID, b.ID))
	})
	if top > 0 && len(rows) > top {
		return rows[:top]
	}
	return rows
}

func entry[T any](totals map[string]*T, key string, create func() *T) *T {
	if total, ok := totals[key]; ok {
		return total
	}
	total := create()
	totals[key] = total
	return total
}

func sortedTotals[T any](totals map[string]*T, compare func(a, b *T) int) []T {
	ptrs := make([]*T, 0, len(totals))
	for _, total := range totals {
		ptrs = append(ptrs, total)
	}
	slices.SortFunc(ptrs, compare)
	out := make([]T, len(ptrs))
	for i, p := range ptrs {
		out[i] = *p
	}
	return out
}

// rankByAttempts orders storms by attempts, then duration, then id, so equal storms keep a
// stable order.
func rankByAttempts(storms []StormRow, top int) []StormRow {
	ranked := slices.Clone(storms)
	slices.SortStableFunc(ranked, func(a, b StormRow) int {
		return cmp.Or(cmp.Compare(b.Attempts, a.Attempts), cmp.Compare(b.MS, a.MS), cmp.Compare(a.ID, b.ID))
	})
	return limit(ranked, top)
}

// rankByFailedTokens keeps storms that spent a known, non-zero number of tokens on failed
// attempts, most first.
func rankByFailedTokens(storms []StormRow, top int) []StormRow {
	var ranked []StormRow
	for _, s := range storms {
		if s.FailedTokens != nil && *s.FailedTokens > 0 {
			ranked = append(ranked, s)
		}
	}
	slices.SortStableFunc(ranked, func(a, b StormRow) int {
		return cmp.Or(cmp.Compare(*b.FailedTokens, *a.FailedTokens), cmp.Compare(b.Attempts, a.Attempts), cmp.Compare(a.ID, b.ID))
	})
	return limit(ranked, top)
}

func limit(rows []StormRow, top int) []StormRow {
	if rows == nil {
		return []StormRow{}
	}
	if top > 0 && len(rows) > top {
		return rows[:top]
	}
	return rows
}
