package analysis

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Settled is what a trace Triage proved clean leaves once its tree is recycled: what
// sampling reads and what dropping the trace records. A shard settles a trace when its
// root arrives, while its spans are still in the CPU's caches, and drops it at its
// deadline without reading a span again.
type Settled struct {
	TraceID pcommon.TraceID
	// TraceState is the root span's tracestate (the first span's without a root).
	TraceState    string
	Tools         []string
	ToolAttempts  int
	Calls         int
	DegradedCalls int
	// ClampedStarts and ClampedEnds count the attempts' times past toolspan.MaxTimestamp.
	ClampedStarts, ClampedEnds int
	// Unseen counts the tool calls the trace shows retry_storm could not see.
	Unseen map[UnseenKey]int
	// results are the ok results' fingerprints and start times, for the stale-cache memory.
	results []settledResult
}

type settledResult struct {
	fingerprint uint64
	at          pcommon.Timestamp
}

// Settle copies out of q, which Triage proved clean, what dropping its trace needs; q can
// be recycled then. traceState is the trace's root tracestate.
func (an *Analyzer) Settle(q *IndexedTrace, traceState string) *Settled {
	st := &Settled{
		TraceState:    traceState,
		Tools:         q.Tools,
		ToolAttempts:  q.ToolAttempts,
		Calls:         q.Calls,
		DegradedCalls: q.DegradedCalls,
		ClampedStarts: q.ClampedStarts,
		ClampedEnds:   q.ClampedEnds,
		Unseen:        q.Unseen,
	}
	nodes := q.Tree.Nodes
	if len(nodes) > 0 {
		st.TraceID = nodes[0].Span.TraceID()
	}
	if an.mem != nil && len(q.fingerprints) > 0 {
		st.results = make([]settledResult, len(q.fingerprints))
		for i, r := range q.fingerprints {
			at, _ := toolspan.ClampTimestamp(nodes[r.node].Span.StartTimestamp())
			st.results[i] = settledResult{fingerprint: r.fingerprint, at: at}
		}
	}
	return st
}

// RememberClean records the ok results of a settled trace in the stale-cache memory, as
// Analyze would have: a trace dropped without analysis is still an earlier trace for the
// stale-cache check. It returns the held suspects of other traces they resolve.
func (an *Analyzer) RememberClean(st *Settled) []stalecache.Match {
	if an.mem == nil {
		return nil
	}
	var out []stalecache.Match
	for _, r := range st.results {
		out = append(out, an.mem.Remember(r.fingerprint, r.at, st.TraceID)...)
	}
	return out
}
