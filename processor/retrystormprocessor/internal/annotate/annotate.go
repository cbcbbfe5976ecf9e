// Package annotate applies an analysis to the spans of a kept trace: the isError status
// remap, the retrystorm.* attributes, finding events, the call summary on each call's last
// attempt and the finding record on each span trace-level findings concern.
package annotate // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/annotate"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

// Options are the per-trace choices.
type Options struct {
	// Reason is the sampling reason written on the root span.
	Reason string
	// Redact says payloads are redacted (package redact does it): a remapped status then
	// does not quote the result.
	Redact bool
}

// Stats counts what Apply changed.
type Stats struct {
	Remapped int
}

// redactedDescription replaces the result text in a remapped status when payloads are
// redacted: the text is part of the result.
const redactedDescription = "tool reported isError (result redacted)"

// Apply mutates the spans of tr's trace in place.
func Apply(tr *analysis.Trace, opts Options) Stats {
	var st Stats
	for _, u := range tr.Units {
		st.Remapped += annotateUnit(u, opts)
	}
	for _, f := range tr.Findings {
		ev := f.Span.Events().AppendEmpty()
		ev.SetName(stormrecord.FindingEvent)
		ev.SetTimestamp(f.Span.EndTimestamp())
		ev.Attributes().PutStr(stormrecord.FindingKind, f.Kind)
		ev.Attributes().PutStr(stormrecord.FindingDetail, f.Detail)
		if f.CallKey != "" {
			ev.Attributes().PutStr(stormrecord.FindingCallKey, f.CallKey)
		}
	}
	for _, sf := range tr.FindingRecords {
		putRecord(sf.Span, stormrecord.AttrFindingSummary, sf.Record)
	}
	annotateRoots(tr, opts.Reason)
	return st
}

func annotateUnit(u *analysis.Unit, opts Options) int {
	remapped := 0
	total, pos := 0, 0
	tool := u.Last().ToolName
	for _, c := range u.Calls {
		total += len(c.Attempts)
	}
	for ci, c := range u.Calls {
		for _, a := range c.Attempts {
			pos++
			annotateAttempt(u, a, pos, total, tool)
			a.Span.Attributes().PutStr(stormrecord.AttrCallLayer, string(analysis.AttemptLayer(a, ci)))
			if a.Remap != nil {
				remap(a, opts.Redact)
				remapped++
			}
		}
		for _, d := range c.Duplicates {
			d.Span.Attributes().PutStr(stormrecord.AttrCallKey, u.Key())
			putNonEmpty(d.Span.Attributes(), stormrecord.AttrCallTool, tool)
			// A duplicate record still says what its span says: fix its status too.
			if d.Remap != nil {
				remap(d, opts.Redact)
				remapped++
			}
		}
	}
	if u.Record != nil {
		putRecord(u.Last().Span, stormrecord.AttrCallSummary, u.Record)
	}
	return remapped
}

// attemptAttrs bounds the attributes an attempt span gets (annotateAttempt, the layer, a
// remap, the unit's summary): room is made once, not by growing the slice per attribute.
const attemptAttrs = 16

func annotateAttempt(u *analysis.Unit, a *grouping.Attempt, pos, total int, tool string) {
	attrs := a.Span.Attributes()
	attrs.EnsureCapacity(attrs.Len() + attemptAttrs)
	attrs.PutStr(stormrecord.AttrCallKey, u.Key())
	putNonEmpty(attrs, stormrecord.AttrCallTool, tool)
	attrs.PutInt(stormrecord.AttrCallAttempt, int64(pos))
	attrs.PutInt(stormrecord.AttrCallAttempts, int64(total))
	attrs.PutBool(stormrecord.AttrCallStorm, u.Storm)
	if u.Class != "" {
		attrs.PutStr(stormrecord.AttrCallClass, string(u.Class))
	}
	attrs.PutStr(stormrecord.AttrStatus, a.Status.String())
	putNonEmpty(attrs, stormrecord.AttrArgsHash, a.ArgsHash)
	putNonEmpty(attrs, stormrecord.AttrResultHash, a.ResultHash)
	putNonEmpty(attrs, stormrecord.AttrIdemHash, a.IdemHash)
	if followed := a.FollowedFields(); len(followed) > 0 {
		s := attrs.PutEmptySlice(stormrecord.AttrFollowed)
		for _, f := range followed {
			s.AppendEmpty().SetStr(f)
		}
	}
	for _, s := range a.Sends {
		sa := s.Span.Attributes()
		sa.EnsureCapacity(sa.Len() + 5)
		sa.PutStr(stormrecord.AttrCallKey, u.Key())
		putNonEmpty(sa, stormrecord.AttrCallTool, tool)
		sa.PutStr(stormrecord.AttrCallLayer, string(stormrecord.LayerTransport))
		sa.PutInt(stormrecord.AttrCallAttempt, s.Number)
		sa.PutStr(stormrecord.AttrStatus, s.Status.String())
	}
}

func putNonEmpty(attrs pcommon.Map, k, v string) {
	if v != "" {
		attrs.PutStr(k, v)
	}
}

func remap(a *grouping.Attempt, redact bool) {
	st := a.Span.Status()
	desc := a.Remap.Description
	switch {
	case a.Remap.Report != "":
		desc = "tool reported " + a.Remap.Report
	case redact:
		desc = redactedDescription
	case desc == "":
		desc = "tool reported isError"
	}
	st.SetCode(ptrace.StatusCodeError)
	st.SetMessage(desc)
	if a.Remap.SetErrorType {
		a.Span.Attributes().PutStr("error.type", outcome.ToolErrorType)
	}
	a.Span.Attributes().PutBool(stormrecord.AttrStatusRemap, true)
}

// annotateRoots writes the trace-level attributes on every root span, or, when the root
// has not arrived, on the first span so the decision stays visible.
func annotateRoots(tr *analysis.Trace, reason string) {
	storms := 0
	for _, u := range tr.Units {
		if u.Storm {
			storms++
		}
	}
	unseen := 0
	for _, n := range tr.Unseen {
		unseen += n
	}
	wrote := false
	for i := range tr.Tree.Nodes {
		span := tr.Tree.Nodes[i].Span
		if span.ParentSpanID().IsEmpty() {
			putTrace(span, storms, len(tr.Findings), unseen, reason)
			wrote = true
		}
	}
	if !wrote {
		// The first span the part forwards: spans held back go on with the rest.
		for i := range tr.Tree.Nodes {
			if tr.Held == nil || !tr.Held[i] {
				putTrace(tr.Tree.Nodes[i].Span, storms, len(tr.Findings), unseen, reason)
				break
			}
		}
	}
}

func putTrace(span ptrace.Span, storms, findings, unseen int, reason string) {
	attrs := span.Attributes()
	attrs.PutInt(stormrecord.AttrTraceStorms, int64(storms))
	attrs.PutInt(stormrecord.AttrTraceFinding, int64(findings))
	if unseen > 0 {
		attrs.PutInt(stormrecord.AttrTraceUnseen, int64(unseen))
	}
	if reason != "" {
		attrs.PutStr(stormrecord.AttrSampling, reason)
	}
}
