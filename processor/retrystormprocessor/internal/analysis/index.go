package analysis

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Indexing: a trace's span tree on the analyzer's reusable storage, and the notes a shard
// takes of each span as it arrives so that the decision need not read the span again.

// Index builds the span tree of td on the analyzer's spare tree, for AnalyzeTree, without
// triage (for a trace already known to hold a signal); Recycle hands it back.
func (an *Analyzer) Index(td ptrace.Traces) *IndexedTrace {
	return an.IndexSpans(td.SpanCount(), tracespans.All(td), nil)
}

// IndexSpans is Index on the n spans spans yields, each with its resource, wherever they
// are held. arrivals, when it holds one Arrival per span in the same order, saves the tree,
// Triage and AnalyzeTree reading the spans' ids, statuses and attributes again.
func (an *Analyzer) IndexSpans(n int, spans iter.Seq2[tracespans.Origin, ptrace.Span], arrivals []grouping.Arrival) *IndexedTrace {
	t := an.spare
	an.spare = nil
	if t == nil {
		t = &grouping.Tree{}
	}
	t.ResetSpans(n, spans, arrivals)
	return &IndexedTrace{Tree: t}
}

// Mark bits: the span was recognised, is a tool span, carries the cited-assets attribute,
// is an HTTP client span (a send), has status ERROR.
const (
	markKnown uint8 = 1 << iota
	markTool
	markCites
	markTransport
	markError
)

// Arrival notes what Triage and AnalyzeTree read of every span, for IndexSpans: a shard
// notes each span as it arrives, while it is still in the CPU's caches, instead of
// reading it again, cold, at the decision. A note stays valid as long as the span's ids,
// status and attributes do.
func (an *Analyzer) Arrival(span ptrace.Span) grouping.Arrival {
	m := markKnown
	tool, cites := an.x.Recognize(span, an.rules.CitedAssetsAttribute)
	if tool {
		m |= markTool
	}
	if cites {
		m |= markCites
	}
	if toolspan.IsTransport(span) {
		m |= markTransport
	}
	if span.Status().Code() == ptrace.StatusCodeError {
		m |= markError
	}
	return grouping.Arrival{ID: span.SpanID(), Parent: span.ParentSpanID(), Mark: m}
}

// NotedError reports that a noted span has status ERROR.
func NotedError(a grouping.Arrival) bool { return a.Mark&markError != 0 }

// spanError reports a node's status ERROR, from its mark when it has one.
func spanError(n *grouping.Node) bool {
	if n.Mark&markKnown != 0 {
		return n.Mark&markError != 0
	}
	return n.Span.Status().Code() == ptrace.StatusCodeError
}

// transport is toolspan.IsTransport on a node, from its mark when it has one.
func transport(n *grouping.Node) bool {
	if n.Mark&markKnown != 0 {
		return n.Mark&markTransport != 0
	}
	return toolspan.IsTransport(n.Span)
}

// recognize is Recognize on a node, from its mark when it has one.
func (an *Analyzer) recognize(n *grouping.Node, also string) (tool, has bool) {
	if n.Mark&markKnown != 0 {
		return n.Mark&markTool != 0, also != "" && n.Mark&markCites != 0
	}
	return an.x.Recognize(n.Span, also)
}

// Recycle hands q's tree back for the next Triage. Call it once nothing uses q, nor an
// analysis of its tree, any more.
func (an *Analyzer) Recycle(q *IndexedTrace) {
	if q == nil || q.Tree == nil {
		return
	}
	t := q.Tree
	q.Tree = nil
	if len(t.Nodes) > maxReusedSpans {
		// One huge trace must not pin its tree (and its id map, which never shrinks)
		// for the life of the shard: let the collector have it.
		an.spare = nil
		an.scratch = newTriageScratch()
		return
	}
	t.Release()
	an.spare = t
	if q.fingerprints != nil {
		an.scratch.fingerprints = q.fingerprints[:0]
		q.fingerprints = nil
	}
}

// maxReusedSpans bounds the trace whose tree and scratch space are kept for reuse.
const maxReusedSpans = 4096
