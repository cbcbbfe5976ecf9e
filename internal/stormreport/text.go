package stormreport // import "github.com/retrystorm/retrystorm/internal/stormreport"

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, report Report) error {
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(report); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}

// WriteText writes the report as plain-text tables.
func WriteText(w io.Writer, input *Input, report Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if report.Scan != nil {
		writeScan(tw, report.Scan)
	}
	fmt.Fprintf(tw, "%d recorded calls from %d files: %d storms, %d status flips, %d attempts (%d failed), %s tokens on failed attempts\n",
		report.Spans, len(input.Files), report.StormSpans, report.StatusFlipSpans,
		report.ToolEvents, report.FailedAttempts, formatTokens(report.FailedTokens))
	if report.TraceFindingRecords > 0 {
		fmt.Fprintf(tw, "%d trace-level findings (of no call) on %d spans\n", report.TraceLevelFindings, report.TraceFindingRecords)
	}
	if report.IncompleteEvents > 0 {
		fmt.Fprintf(tw, "%d incomplete attempts: their calls are untrusted for cost analysis\n", report.IncompleteEvents)
	}
	if input.SkippedLines > 0 || input.Duplicates > 0 {
		fmt.Fprintf(tw, "skipped %d lines that are not summary records and %d lines of an id read as its most complete line\n", input.SkippedLines, input.Duplicates)
	}
	writeStorms(tw, "Top storms by attempts", report.TopStorms)
	writeStorms(tw, "Top storms by tokens spent on failed attempts", report.TopFailedTokenStorms)
	fmt.Fprintf(tw, "\nStorms by class\nclass\tstorms\tattempts\tfailed tokens\n")
	for _, c := range report.ByClass {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", c.Class, c.Storms, c.Attempts, formatTokens(c.FailedTokens))
	}
	fmt.Fprintf(tw, "\nFindings by kind\nkind\tfindings\tcalls\ttrace-level records\n")
	for _, f := range report.ByFinding {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", f.Kind, f.Findings, f.Calls, f.TraceRecords)
	}
	writeTraceFindings(tw, report)
	fmt.Fprintf(tw, "\nCalls by tool\ntool\tcalls\tstorms\tattempts\tfailed attempts\tfailed tokens\n")
	for _, t := range report.ByTool {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", t.Tool, t.Calls, t.Storms, t.Attempts, t.FailedAttempts, formatTokens(t.FailedTokens))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write text report: %w", err)
	}
	if report.Truth != nil {
		if _, err := fmt.Fprintf(w, "\n%s\n", report.Truth.Line); err != nil {
			return fmt.Errorf("write text report: %w", err)
		}
	}
	return nil
}

// writeScan says what the scan read and what it decided early, before the records' totals.
func writeScan(w io.Writer, s *ScanSummary) {
	fmt.Fprintf(w, "scanned %d files (%d unreadable), %d bytes: %d spans (%d from per-attempt logs), %d traces kept, %d dropped",
		s.Files, s.Unreadable, s.Bytes, s.Spans, s.LoggedAttempts, s.Traces["kept"], s.Traces["dropped"])
	if s.BadLines > 0 || s.SkippedLines > 0 {
		fmt.Fprintf(w, "; %d lines did not parse, %d skipped", s.BadLines, s.SkippedLines)
	}
	if s.Oversized > 0 {
		fmt.Fprintf(w, " (%d of them over --max-message-bytes %d)", s.Oversized, s.MaxMessageBytes)
	}
	fmt.Fprintln(w)
	if early := s.EarlyDecisions["memory_pressure"] + s.EarlyDecisions["trace_bytes"]; early > 0 {
		fmt.Fprintf(w, "%d traces decided before the input ended (memory bound %d bytes: %d, max_trace_bytes: %d): judged on the spans read by then\n",
			early, s.MaxBufferedBytes, s.EarlyDecisions["memory_pressure"], s.EarlyDecisions["trace_bytes"])
	}
	if s.LateSpans > 0 {
		fmt.Fprintf(w, "%d spans came after their trace was decided and were not analysed\n", s.LateSpans)
	}
	fmt.Fprintln(w)
}

// writeTraceFindings lists the finding records, one row per finding.
func writeTraceFindings(w io.Writer, report Report) {
	fmt.Fprintf(w, "\nTrace-level findings (findings of no call, on the span they concern)\n")
	if len(report.TraceFindings) == 0 {
		fmt.Fprintln(w, "(none)")
		return
	}
	fmt.Fprintln(w, "time\tkind\tspan\ttrace\trun\tdetail")
	for _, row := range report.TraceFindings {
		for _, f := range row.Findings {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Time, f.Kind, row.SpanName, row.TraceID, orDash(row.RunID), f.Detail)
		}
	}
	if hidden := report.TraceFindingRecords - len(report.TraceFindings); hidden > 0 {
		fmt.Fprintf(w, "%d more spans with trace-level findings not shown; raise --top to see them\n", hidden)
	}
}

func writeStorms(w io.Writer, title string, rows []StormRow) {
	fmt.Fprintf(w, "\n%s\n", title)
	if len(rows) == 0 {
		fmt.Fprintln(w, "(none)")
		return
	}
	fmt.Fprintln(w, "#\ttool\tcall key\trun\tattempts\tstatuses\targs\tduration\tfailed tokens\tclass\tidem hash")
	for i, row := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", i+1, row.ToolName, row.SpanID,
			orDash(row.RunID), row.Attempts, strings.Join(row.Statuses, ","), row.UniqueArgs,
			FormatDuration(row.MS), formatTokens(row.FailedTokens), classOf(row), shortHash(orDash(row.IdemHash)))
	}
}

// classOf is the row's class, marked when the record covers part of its trace.
func classOf(row StormRow) string {
	if row.Partial {
		return orDash(row.Class) + " (partial trace)"
	}
	return orDash(row.Class)
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// shortHash keeps the start of a long hash: enough to recognise it, short enough for a
// table. The JSON report and the page's tooltip keep the full value.
func shortHash(hash string) string {
	if len(hash) <= 16 {
		return hash
	}
	return hash[:12] + "…"
}

// formatTokens prints a token count with thousands separators, "unknown" when nil.
func formatTokens(tokens *int64) string {
	if tokens == nil {
		return "unknown"
	}
	return groupThousands(*tokens)
}

func groupThousands(n int64) string {
	digits := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}

// FormatDuration prints milliseconds the way people read them: 820 ms, 4.08 s, 12.5 s,
// 2m05s.
func FormatDuration(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 10_000:
		return fmt.Sprintf("%.2f s", float64(ms)/1000)
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	default:
		return fmt.Sprintf("%dm%02ds", ms/60_000, (ms%60_000)/1000)
	}
}
