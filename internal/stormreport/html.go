package stormreport // import "github.com/retrystorm/retrystorm/internal/stormreport"

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"tokens":    formatTokens,
	"thousands": func(n int) string { return groupThousands(int64(n)) },
}).Parse(pageTemplate))

// maxOtherCalls bounds the table of recorded calls that are not storms.
const maxOtherCalls = 200

type pageView struct {
	Files        []string
	Period       string
	Tiles        []tileView
	Report       Report
	ClassBars    []shareView
	Storms       []stormView
	HiddenStorms int
	Others       []otherView
	HiddenOthers int
	Legend       []legendView
	// TraceFindings are the findings of no call, one row per finding.
	TraceFindings       []traceFindingView
	HiddenTraceFindings int
}

type traceFindingView struct {
	Time, Kind, Detail, SpanName, SpanID, TraceID, RunID, TraceURL string
}

type tileView struct {
	Label, Value, Note, Tone string
}

type shareView struct {
	ClassTotal
	Percent float64
	Tone    string
}

type legendView struct{ Status, Fill string }

type stormView struct {
	Rank                          int
	ID, ToolName, CallKey, RunID  string
	Class, ClassTone, TraceURL    string
	Time, Duration, Layers        string
	Attempts, UniqueArgs          int
	Statuses, IdemHash, IdemFull  string
	FailedTokens, Tokens, Effects string
	StatusFlip                    bool
	// Partial: the record covers part of its trace (a provisional decision).
	Partial  bool
	Findings []stormrecord.Finding
	Timeline timelineView
}

type otherView struct {
	ToolName, CallKey, Statuses, Findings, Time, TraceURL string
}

// classTone maps a storm class to a badge colour family in the page's stylesheet.
var classTone = map[string]string{
	"transient_dependency":  "amber",
	"changed_arguments":     "violet",
	"retry_after_success":   "blue",
	"exhausted":             "red",
	"duplicate_side_effect": "crimson",
}

// WriteHTML writes one self-contained page (inline CSS and SVG, no script, no network):
// totals, then a timeline per storm, ranked like the report's top storms.
func WriteHTML(w io.Writer, input *Input, report Report) error {
	view := pageView{Report: report, Tiles: tiles(report), Legend: legend()}
	for _, f := range input.Files {
		view.Files = append(view.Files, filepath.Base(f))
	}
	byID := make(map[string]*stormrecord.Record, len(input.Records))
	for i := range input.Records {
		byID[input.Records[i].ID] = &input.Records[i]
	}
	for i, row := range report.TopStorms {
		view.Storms = append(view.Storms, newStormView(i+1, byID[row.ID]))
	}
	view.HiddenStorms = report.StormSpans - len(view.Storms)
	view.ClassBars = classShares(report)
	view.Others, view.HiddenOthers = otherCalls(input.Records)
	view.Period = period(input.Records)
	view.TraceFindings = traceFindingViews(report.TraceFindings)
	view.HiddenTraceFindings = report.TraceFindingRecords - len(report.TraceFindings)
	if err := page.Execute(w, view); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

func tiles(r Report) []tileView {
	out := []tileView{
		{Label: "Storms", Value: groupThousands(int64(r.StormSpans)), Note: fmt.Sprintf("of %s recorded calls", groupThousands(int64(r.Spans))), Tone: "accent"},
		{Label: "Attempts", Value: groupThousands(int64(r.ToolEvents)), Note: fmt.Sprintf("%s did not succeed", groupThousands(int64(r.FailedAttempts)))},
		{Label: "Tokens on failed attempts", Value: formatTokens(r.FailedTokens), Note: "spent and thrown away"},
		{Label: "Status flips", Value: groupThousands(int64(r.StatusFlipSpans)), Note: "calls whose attempts disagreed"},
	}
	findings := 0
	for _, f := range r.ByFinding {
		findings += f.Findings
	}
	note := "divergences between trace and reality"
	if r.TraceLevelFindings > 0 {
		note = fmt.Sprintf("divergences between trace and reality; %s of no call", groupThousands(int64(r.TraceLevelFindings)))
	}
	out = append(out, tileView{Label: "Findings", Value: groupThousands(int64(findings)), Note: note})
	if r.IncompleteEvents > 0 {
		out = append(out, tileView{Label: "Incomplete attempts", Value: groupThousands(int64(r.IncompleteEvents)), Note: "untrusted for cost analysis", Tone: "warn"})
	}
	return out
}

func legend() []legendView {
	var out []legendView
	for _, status := range []string{"ok", "error", "timeout", "unknown"} {
		out = append(out, legendView{Status: status, Fill: statusStyle[status].fill})
	}
	return out
}

func classShares(r Report) []shareView {
	out := make([]shareView, 0, len(r.ByClass))
	for _, c := range r.ByClass {
		percent := 0.0
		if r.StormSpans > 0 {
			percent = round1(100 * float64(c.Storms) / float64(r.StormSpans))
		}
		out = append(out, shareView{ClassTotal: c, Percent: percent, Tone: cmp.Or(classTone[c.Class], "grey")})
	}
	return out
}

func newStormView(rank int, r *stormrecord.Record) stormView {
	class := ClassName(r)
	view := stormView{
		Rank: rank, ID: r.ID, ToolName: r.ToolName, CallKey: r.CallKey, RunID: orDash(r.RunID), Partial: r.Partial,
		Class: class, ClassTone: cmp.Or(classTone[class], "grey"), TraceURL: deref(r.TraceURL),
		Time: r.Time, Duration: FormatDuration(r.MS), Attempts: r.Attempts, UniqueArgs: r.UniqueArgs,
		Layers:       fmt.Sprintf("transport %d · executor %d · agent %d", r.Layers.Transport, r.Layers.Executor, r.Layers.Agent),
		Statuses:     strings.Join(r.Statuses, " → "),
		IdemHash:     shortHash(orDash(r.IdemHash)),
		IdemFull:     orDash(r.IdemHash),
		FailedTokens: formatTokens(FailedTokens(r)),
		Tokens:       formatTokens(addKnown(addKnown(nil, r.TokensIn), r.TokensOut)),
		Effects:      strings.Join(r.SideEffects, ", "),
		StatusFlip:   r.StatusFlip,
		Findings:     r.Findings,
		Timeline:     newTimeline(r),
	}
	if view.Effects == "" {
		view.Effects = "-"
	}
	return view
}

// traceFindingViews lists the finding records' findings in the report's order (newest first).
func traceFindingViews(rows []TraceFindingRow) []traceFindingView {
	var out []traceFindingView
	for _, row := range rows {
		for _, f := range row.Findings {
			out = append(out, traceFindingView{
				Time: row.Time, Kind: f.Kind, Detail: f.Detail, SpanName: row.SpanName, SpanID: row.SpanID,
				TraceID: row.TraceID, RunID: orDash(row.RunID), TraceURL: deref(row.TraceURL),
			})
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// otherCalls lists recorded calls that are not storms (failures, calls with findings),
// newest first.
func otherCalls(records []stormrecord.Record) ([]otherView, int) {
	var others []otherView
	for i := range records {
		r := &records[i]
		if r.Storm {
			continue
		}
		kinds := make([]string, 0, len(r.Findings))
		for _, f := range r.Findings {
			kinds = append(kinds, f.Kind)
		}
		others = append(others, otherView{
			ToolName: r.ToolName, CallKey: r.CallKey, Statuses: strings.Join(r.Statuses, " → "),
			Findings: cmp.Or(strings.Join(kinds, ", "), "-"), Time: r.Time, TraceURL: deref(r.TraceURL),
		})
	}
	slices.SortStableFunc(others, func(a, b otherView) int { return cmp.Compare(b.Time, a.Time) })
	if len(others) > maxOtherCalls {
		return others[:maxOtherCalls], len(others) - maxOtherCalls
	}
	return others, 0
}

// period spans the records' times (RFC 3339 strings sort in time order when they share an
// offset, which the exporter's UTC times do).
func period(records []stormrecord.Record) string {
	var first, last string
	for i := range records {
		t := records[i].Time
		if t == "" {
			continue
		}
		if first == "" || t < first {
			first = t
		}
		if t > last {
			last = t
		}
	}
	if first == "" {
		return ""
	}
	if first == last {
		return first
	}
	return first + " – " + last
}
