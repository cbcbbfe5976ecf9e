package analysis

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// buildRecord fills every field of the storm summary record that the trace tells.
func buildRecord(traceID pcommon.TraceID, u *Unit) *stormrecord.Record {
	attempts := u.Attempts()
	last := u.Last()
	tries := tryList(attempts)
	traceHex := traceID.String()
	r := &stormrecord.Record{
		Schema:             stormrecord.Schema,
		Revision:           1,
		ID:                 stormrecord.RecordID(traceHex, u.Key()),
		TraceID:            traceHex,
		CallKey:            u.Key(),
		ToolName:           last.ToolName,
		Storm:              u.Storm,
		Layer:              u.Layer,
		Layers:             u.Layers,
		Attempts:           len(attempts),
		UniqueArgs:         classify.UniqueArgs(tries),
		UniqueResults:      uniqueResults(attempts),
		StatusFlip:         u.StatusFlip,
		IncompleteAttempts: u.Incomplete,
		Statuses:           make([]string, len(attempts)),
		AttemptSpanIDs:     make([]string, len(attempts)),
		Findings:           make([]stormrecord.Finding, 0, len(u.Findings)),
	}
	first, end := attempts[0].Start, last.End
	for i, a := range attempts {
		r.Statuses[i] = a.Status.String()
		r.AttemptSpanIDs[i] = a.SpanID.String()
		first, end = min(first, a.Start), max(end, a.End)
		if r.RunID == nil && a.RunID != "" {
			r.RunID = ptr(a.RunID)
		}
		if r.IdemHash == nil && a.IdemHash != "" {
			r.IdemHash = ptr(a.IdemHash)
		}
	}
	r.Time = end.AsTime().UTC().Format(time.RFC3339Nano)
	if end > first {
		r.MS = int64(end-first) / int64(time.Millisecond)
	}
	if svc, ok := last.Resource.Attributes().Get("service.name"); ok && svc.Str() != "" {
		r.ServiceName = ptr(svc.Str())
	}
	if u.Class != "" {
		r.Class = ptr(string(u.Class))
	}
	for _, f := range u.Findings {
		r.Findings = append(r.Findings, stormrecord.Finding{Kind: f.Kind, Detail: f.Detail})
	}
	fillCosts(r, attempts)
	r.Timeline = timeline(u, first)
	return r
}

// AttemptLayer names who made an attempt: the first attempt is "initial", a later attempt
// of the same call was made by the executor, the first attempt of a later call in an
// agent-level chain by the agent.
func AttemptLayer(a *grouping.Attempt, callIndex int) stormrecord.Layer {
	switch {
	case a.Order > 1:
		return stormrecord.LayerExecutor
	case callIndex > 0:
		return stormrecord.LayerAgent
	}
	return stormrecord.LayerInitial
}

func timeline(u *Unit, first pcommon.Timestamp) []stormrecord.AttemptTime {
	var out []stormrecord.AttemptTime
	n := 0
	for ci, c := range u.Calls {
		for _, a := range c.Attempts {
			n++
			out = append(out, stormrecord.AttemptTime{
				StartMSOffset: int64(a.Start-first) / int64(time.Millisecond),
				DurationMS:    a.DurationNanos() / int64(time.Millisecond),
				Status:        a.Status.String(),
				Layer:         AttemptLayer(a, ci),
				Attempt:       n,
			})
		}
	}
	return out
}

// fillCosts sums tokens over the attempts that carry them; a sum stays null when no
// attempt carried the field (never a fabricated zero).
func fillCosts(r *stormrecord.Record, attempts []*grouping.Attempt) {
	for _, a := range attempts {
		failed := a.Status.String() != "ok"
		if a.Has(toolspan.FieldTokensIn) {
			r.TokensIn = add(r.TokensIn, a.TokensIn)
			if failed {
				r.FailedTokensIn = add(r.FailedTokensIn, a.TokensIn)
			}
		}
		if a.Has(toolspan.FieldTokensOut) {
			r.TokensOut = add(r.TokensOut, a.TokensOut)
			if failed {
				r.FailedTokensOut = add(r.FailedTokensOut, a.TokensOut)
			}
		}
		if a.SideEffect != "" {
			r.SideEffects = append(r.SideEffects, a.SideEffect)
		}
	}
	// Tokens are known but every attempt succeeded: the failed sum is a real zero.
	if r.TokensIn != nil && r.FailedTokensIn == nil && allCarry(attempts, toolspan.FieldTokensIn) {
		r.FailedTokensIn = ptr(int64(0))
	}
	if r.TokensOut != nil && r.FailedTokensOut == nil && allCarry(attempts, toolspan.FieldTokensOut) {
		r.FailedTokensOut = ptr(int64(0))
	}
}

func allCarry(attempts []*grouping.Attempt, f toolspan.Field) bool {
	for _, a := range attempts {
		if !a.Has(f) {
			return false
		}
	}
	return true
}

// uniqueResults counts the distinct results of the ok attempts.
func uniqueResults(attempts []*grouping.Attempt) int {
	seen := map[string]struct{}{}
	for _, a := range attempts {
		// A failed attempt's output is its error text, not a result.
		if a.ResultHash != "" && a.Status == outcome.OK {
			seen[a.ResultHash] = struct{}{}
		}
	}
	return len(seen)
}

// add sums token counts (never negative), saturating at MaxInt64: a count that large is
// already absurd, and wrapping would report a negative cost.
func add(sum *int64, n int64) *int64 {
	if sum == nil {
		return ptr(n)
	}
	if *sum > math.MaxInt64-n {
		*sum = math.MaxInt64
	} else {
		*sum += n
	}
	return sum
}

func ptr[T any](v T) *T { return &v }
