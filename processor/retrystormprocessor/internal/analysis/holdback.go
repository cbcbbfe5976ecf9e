package analysis

import (
	"slices"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Holding calls back. A trace decided provisionally before its root arrived may go on: a
// call whose first attempt failed in the part decided may be retried in the rest. Judged
// apart, the part's record says the call failed (unrecovered_failure) and the rest's says
// nothing, or each counts it once. So the processor holds such calls back with the rest of
// the trace, to be analysed with it, and takes them out of the part's analysis here.

// SelfDescribed reports whether u's attempts say all the analysis reads of them on their
// own spans: none was found or completed by following the model, whose messages stay with
// the part decided. Only such a unit reads the same in the rest of its trace.
func (u *Unit) SelfDescribed() bool {
	for _, c := range u.Calls {
		for _, as := range [][]*grouping.Attempt{c.Attempts, c.Duplicates} {
			for _, a := range as {
				if a.Followed || a.Told != 0 {
					return false
				}
			}
		}
	}
	return true
}

// Nodes appends to out the tree nodes of u's attempts and of their logical spans and
// duplicates: the spans holding u back must move.
func (u *Unit) Nodes(out []int32) []int32 {
	for _, c := range u.Calls {
		for _, as := range [][]*grouping.Attempt{c.Attempts, c.Duplicates} {
			for _, a := range as {
				out = append(out, a.Node)
				if a.Logical >= 0 {
					out = append(out, a.Logical)
				}
			}
		}
	}
	return out
}

// HoldBack takes units out of the trace's analysis: their records, findings, suspects and
// counts go with the rest of the trace, analysed again there. held marks every node that
// goes with them (so a span in status ERROR among them is no signal of this part), and the
// signals are read again without them. The units stay in HeldUnits, whose payloads the
// part is still redacted of.
func (tr *Trace) HoldBack(units []*Unit, held []bool) {
	if len(units) == 0 {
		return
	}
	keys := map[string]bool{}
	for _, u := range units {
		keys[u.Key()] = true
		tr.Calls -= len(u.Calls)
		tr.IncompleteAttempts -= u.Incomplete
		for _, c := range u.Calls {
			if c.Degraded {
				tr.DegradedCalls--
			}
			tr.ToolAttempts -= len(c.Attempts)
			for _, a := range c.Attempts {
				tr.ClampedStarts, tr.ClampedEnds = uncountClamped(&a.Attempt, tr.ClampedStarts, tr.ClampedEnds)
				if a.Remap != nil {
					tr.Remaps--
				}
			}
		}
	}
	tr.Units = slices.DeleteFunc(tr.Units, func(u *Unit) bool { return slices.Contains(units, u) })
	tr.HeldUnits = append(tr.HeldUnits, units...)
	tr.Held = held
	tr.Findings = slices.DeleteFunc(tr.Findings, func(f findings.Finding) bool { return f.CallKey != "" && keys[f.CallKey] })
	tr.Suspects = slices.DeleteFunc(tr.Suspects, func(s Suspect) bool { return slices.Contains(units, s.Unit) })
	tr.Signals = Signals{}
	for i := range tr.Tree.Nodes {
		if !held[i] && spanError(&tr.Tree.Nodes[i]) {
			tr.Signals.SpanError = true
			break
		}
	}
	tr.unitSignals()
}

// uncountClamped takes a's clamped start and end off the counts.
func uncountClamped(a *toolspan.Attempt, starts, ends int) (int, int) {
	s, e := countClamped(a, 0, 0)
	return starts - s, ends - e
}
