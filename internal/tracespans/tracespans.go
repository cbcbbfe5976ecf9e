// Package tracespans walks every span of a ptrace.Traces, with its resource and scope.
package tracespans // import "github.com/retrystorm/retrystorm/internal/tracespans"

import (
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Origin is where a span was sent from: its resource and instrumentation scope.
type Origin struct {
	Resource pcommon.Resource
	Scope    pcommon.InstrumentationScope
}

// All yields each span of td with its origin, in order: resource by resource, scope by
// scope, span by span (the order a span tree indexes them in).
func All(td ptrace.Traces) iter.Seq2[Origin, ptrace.Span] {
	return func(yield func(Origin, ptrace.Span) bool) {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rs := rss.At(i)
			sss := rs.ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				o := Origin{Resource: rs.Resource(), Scope: sss.At(j).Scope()}
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					if !yield(o, spans.At(k)) {
						return
					}
				}
			}
		}
	}
}

// OnePerRequest splits td into one Traces per span, in All's order, each span beside a
// copy of its own resource and scope (name, version, attributes): how an SDK that exports
// every span as it ends sends a trace.
func OnePerRequest(td ptrace.Traces) []ptrace.Traces {
	out := make([]ptrace.Traces, 0, td.SpanCount())
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				one := ptrace.NewTraces()
				ors := one.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(ors.Resource())
				ors.SetSchemaUrl(rs.SchemaUrl())
				oss := ors.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(oss.Scope())
				oss.SetSchemaUrl(ss.SchemaUrl())
				span.CopyTo(oss.Spans().AppendEmpty())
				out = append(out, one)
			}
		}
	}
	return out
}
