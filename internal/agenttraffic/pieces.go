package agenttraffic

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"
)

// Sending in pieces. An SDK's batch span processor exports a span when it ends, so a long
// agent run reaches the collector as several requests seconds apart: the spans in the
// order they ended, the root (which ends last) in the last request. The first pieces of a
// run that ends in a storm are its early model and tool spans, clean-looking and rootless.

// EndOrder returns the indexes of t's spans in the order they end: by end time, ties in
// plan order, root spans after every other span (a root ends when its run does, even when
// the plan gives a child the same instant).
func EndOrder(t *Trace) []int {
	order := make([]int, len(t.Spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		sa, sb := &t.Spans[a], &t.Spans[b]
		if ra, rb := sa.Parent.IsZero(), sb.Parent.IsZero(); ra != rb {
			if ra {
				return 1
			}
			return -1
		}
		return sa.End.Compare(sb.End)
	})
	return order
}

// Pieces cuts t's spans, in end order, into n requests of about equal span counts, the
// root in the last: what a batch exporter sends of a long run. n is at least 1 and at most
// the number of spans.
func Pieces(t *Trace, n int) [][]int {
	order := EndOrder(t)
	n = max(min(n, len(order)), 1)
	out := make([][]int, 0, n)
	for k := range n {
		out = append(out, order[k*len(order)/n:(k+1)*len(order)/n])
	}
	return out
}

// PieceToPdata converts the spans idx of t into one request, under t's resource and scope.
func PieceToPdata(t *Trace, idx []int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", t.Service)
	rs.Resource().Attributes().PutStr("telemetry.sdk.name", "agentsim")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(t.Scope)
	spans := ss.Spans()
	spans.EnsureCapacity(len(idx))
	for _, i := range idx {
		putSpan(spans.AppendEmpty(), pcommon.TraceID(t.ID), &t.Spans[i])
	}
	return td
}

// ReplayInPieces starts every span of t through tp, as Replay does, then ends them piece by
// piece (Pieces) in end order. After each piece but the last it calls between with the
// piece's number, to flush the provider and wait as a live run would; an error from
// between ends the replay, the spans not yet ended are ended at once so none leaks.
func ReplayInPieces(ctx context.Context, tp trace.TracerProvider, t *Trace, pieces int, between func(piece int) error) error {
	tracer := tp.Tracer(t.Scope)
	started := make([]trace.Span, len(t.Spans))
	ctxOf := make(map[SpanID]context.Context, len(t.Spans))
	var err error
	for _, i := range parentsFirst(t) {
		s := &t.Spans[i]
		parent, ok := ctxOf[s.Parent]
		if !ok {
			parent = ctx
		}
		var spanErr error
		ctxOf[s.ID], started[i], spanErr = startPlanned(parent, tracer, t, i, s.Parent.IsZero() || !ok)
		err = cmp.Or(err, spanErr)
	}
	cut := Pieces(t, pieces)
	for k, piece := range cut {
		for _, i := range piece {
			started[i].End(trace.WithTimestamp(t.Spans[i].End))
			started[i] = nil
		}
		if k == len(cut)-1 || err != nil {
			continue
		}
		if berr := between(k); berr != nil {
			err = fmt.Errorf("replay trace %s in pieces: %w", t.ID, berr)
		}
	}
	for i, span := range started {
		if span != nil {
			span.End(trace.WithTimestamp(t.Spans[i].End))
		}
	}
	return err
}

// parentsFirst orders t's spans so that each comes after its parent: the plan's order is
// already so, but a trace built by hand need not be.
func parentsFirst(t *Trace) []int {
	children := map[SpanID][]int{}
	known := make(map[SpanID]bool, len(t.Spans))
	for i := range t.Spans {
		known[t.Spans[i].ID] = true
	}
	var order, stack []int
	for i := len(t.Spans) - 1; i >= 0; i-- {
		s := &t.Spans[i]
		if s.Parent.IsZero() || !known[s.Parent] {
			stack = append(stack, i)
		} else {
			children[s.Parent] = append(children[s.Parent], i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, i)
		stack = append(stack, children[t.Spans[i].ID]...)
	}
	return order
}
