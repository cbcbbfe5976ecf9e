package findings

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

// DuplicateSideEffects finds idempotency hashes under which two or more attempts had an
// external side effect anywhere in the trace (across calls too: a re-call with a new call
// id and the same key is still one operation). The finding goes to the unit holding the
// last such attempt.
func DuplicateSideEffects(units []*grouping.Unit) map[*grouping.Unit][]Finding {
	type effect struct {
		unit *grouping.Unit
		last *grouping.Attempt
		n    int
	}
	byIdem := map[string]*effect{}
	var order []string
	for _, u := range units {
		for _, a := range u.Attempts() {
			if a.IdemHash == "" || a.SideEffect != "external" {
				continue
			}
			e, ok := byIdem[a.IdemHash]
			if !ok {
				e = &effect{}
				byIdem[a.IdemHash] = e
				order = append(order, a.IdemHash)
			}
			e.n++
			if e.last == nil || a.Start >= e.last.Start {
				e.unit, e.last = u, a
			}
		}
	}
	out := map[*grouping.Unit][]Finding{}
	for _, idem := range order {
		e := byIdem[idem]
		if e.n < 2 {
			continue
		}
		out[e.unit] = append(out[e.unit], Finding{
			Kind: DuplicateSideEffect, Span: e.last.Span, CallKey: e.unit.Key(),
			Detail: fmt.Sprintf("%d attempts of %s had an external side effect under one idempotency key", e.n, e.last.ToolName),
		})
	}
	return out
}

// Reads maps an asset to whether some span read it successfully.
type Reads map[string]bool

// Add records a read span's outcome; one success is enough.
func (r Reads) Add(asset string, ok bool) {
	if asset != "" {
		r[asset] = r[asset] || ok
	}
}

// ReadOK is the outcome of a read span that is not a tool attempt.
func ReadOK(span ptrace.Span) bool { return span.Status().Code() != ptrace.StatusCodeError }

// ToolReadOK is the outcome of a tool attempt read.
func ToolReadOK(s outcome.Status) bool { return s == outcome.OK }

// UnbackedCitations checks every answer span of the tree: each cited asset needs a
// successful read span in the trace.
func UnbackedCitations(cfg *Rules, t *grouping.Tree, reads Reads) []Finding {
	var out []Finding
	for i := range t.Nodes {
		span := t.Nodes[i].Span
		v, ok := span.Attributes().Get(cfg.CitedAssetsAttribute)
		if !ok {
			continue
		}
		for _, asset := range CitedAssets(v) {
			if !reads[asset] {
				out = append(out, Finding{
					Kind: UnbackedCitation, Span: span,
					Detail: fmt.Sprintf("answer cites %q with no successful read in the trace", asset),
				})
			}
		}
	}
	return out
}

// CitedAssets reads a list of assets from a string slice, a JSON array string, or a
// comma-separated string.
func CitedAssets(v pcommon.Value) []string {
	var out []string
	switch v.Type() {
	case pcommon.ValueTypeSlice:
		for i := 0; i < v.Slice().Len(); i++ {
			if s := strings.TrimSpace(v.Slice().At(i).AsString()); s != "" {
				out = append(out, s)
			}
		}
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(v.Str())
		if strings.HasPrefix(s, "[") {
			var list []string
			if json.Unmarshal([]byte(s), &list) == nil {
				return list
			}
		}
		for _, part := range strings.Split(s, ",") {
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// RecoveredLater lists the units whose last attempt failed and whose agent's next tool
// call was a call of the same tool that ended ok: the agent re-called the tool with
// changed arguments (a backup card, a corrected query), which grouping keeps as separate
// units, and its answer rests on that call, so an unrecovered_failure would be a false
// alarm. The next call is the first, by start, of any tool below the same agent run
// (grouping.Attempt.AgentRun) that started after the failed attempt did; units must be in
// start order.
func RecoveredLater(units []*grouping.Unit) map[*grouping.Unit]bool {
	var out map[*grouping.Unit]bool
	for i, u := range units {
		last := u.Last()
		if !last.Status.Failed() {
			continue
		}
		var next *grouping.Call
		for _, later := range units[i+1:] {
			for _, c := range later.Calls {
				if first := c.Attempts[0]; first.AgentRun == last.AgentRun && c.Start() >= last.Start && (next == nil || c.Start() < next.Start()) {
					next = c
				}
			}
		}
		if next != nil && next.Last().ToolName == last.ToolName && next.Last().Status == outcome.OK {
			if out == nil {
				out = map[*grouping.Unit]bool{}
			}
			out[u] = true
		}
	}
	return out
}
