package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"slices"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// Holding calls back across a provisional decision. A fragment (its root not arrived)
// decided early is still going on: a charge that failed in the part decided may succeed in
// the rest. Decided apart, the part recorded one failed attempt and unrecovered_failure,
// the rest nothing, and each counted the call. So when such a part is kept, its calls move
// on with the rest instead: the spans of their attempts, copied before the part is
// annotated, are the rest's first spans, and the calls are recorded and counted once, as
// the rest shows them with their earlier attempts (analysis.Trace.HoldBack). The part still
// decides on them, and is still redacted of their payloads.
//
// Bounds: the spans held take at most a quarter of max_trace_bytes, and a part is never
// held whole (its decision must free something, or memory pressure would decide it again
// and again). A call found or completed by following the model is not held: the model's
// messages stay with the part, and the rest would read the call differently. A call not
// held is recorded with the part, partial.

// holdBack picks the calls of a kept provisional part of a fragment to hold back for the
// rest of its trace, takes their spans out of t's set (copies, unannotated, are returned,
// nil when nothing is held) and their units out of tr, and marks the part's other records
// partial.
func (v *Verdict) holdBack(t *Trace, tr *analysis.Trace) *spanset.Set {
	defer markPartial(tr)
	n := len(tr.Tree.Nodes)
	held := make([]bool, n)
	budget := v.shared.MaxTraceBytes / 4
	var units []*analysis.Unit
	var nodes, sub []int32
	seen := make([]bool, n)
	count := 0
	for _, u := range holdOrder(tr.Units) {
		if !u.SelfDescribed() {
			continue
		}
		nodes = u.Nodes(nodes[:0])
		sub = subtree(tr.Tree, nodes, held, seen, sub[:0])
		var size int64
		for _, i := range sub {
			size += int64(spanset.Field(v.sizer.SpanSize(tr.Tree.Nodes[i].Span)))
		}
		if size > budget || count+len(sub) >= n {
			continue
		}
		budget -= size
		count += len(sub)
		for _, i := range sub {
			held[i] = true
		}
		units = append(units, u)
	}
	if len(units) == 0 {
		return nil
	}
	rest := t.Set.Take(held, count)
	tr.HoldBack(units, held)
	return rest
}

// holdOrder lists units whose last attempt failed first: a retry in the rest changes what
// they say the most.
func holdOrder(units []*analysis.Unit) []*analysis.Unit {
	out := slices.Clone(units)
	slices.SortStableFunc(out, func(a, b *analysis.Unit) int {
		af, bf := a.Last().Status.Failed(), b.Last().Status.Failed()
		switch {
		case af == bf:
			return 0
		case af:
			return -1
		}
		return 1
	})
	return out
}

// subtree appends to out the nodes of the subtrees under roots not yet held (an attempt's
// HTTP sends, the server side of an MCP call, what ran under a tool): they go with it.
// seen is scratch space, all false on entry and on return.
func subtree(t *grouping.Tree, roots []int32, held, seen []bool, out []int32) []int32 {
	from := len(out)
	stack := append([]int32(nil), roots...)
	// Each node is pushed once as a child, and roots once more.
	for steps := 0; len(stack) > 0 && steps <= len(t.Nodes)+len(roots); steps++ {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if held[i] || seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, i)
		stack = append(stack, t.Children(i)...)
	}
	for _, i := range out[from:] {
		seen[i] = false
	}
	return out
}

// markPartial marks the records of a fragment's provisional part partial: its calls may go
// on in the rest, and its answers may cite what the rest reads.
func markPartial(tr *analysis.Trace) {
	for _, u := range tr.Units {
		if u.Record != nil {
			u.Record.Partial = true
		}
	}
	for _, sf := range tr.FindingRecords {
		sf.Record.Partial = true
	}
}
