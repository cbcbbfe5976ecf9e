package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import "go.opentelemetry.io/collector/pdata/ptrace"

// chunkSpans splits td into pieces of at most max spans, keeping each span's resource and
// scope, so a kept trace of any size leaves in requests a backend accepts (OTLP receivers
// refuse requests over 4 MiB by default). td is consumed.
func chunkSpans(td ptrace.Traces, max int) []ptrace.Traces {
	var out []ptrace.Traces
	cur, n := ptrace.NewTraces(), 0
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			var dst ptrace.SpanSlice
			for _, span := range ss.Spans().All() {
				if n == max {
					out = append(out, cur)
					cur, n = ptrace.NewTraces(), 0
				}
				if n == 0 || dst == (ptrace.SpanSlice{}) {
					dst = appendScope(cur, rs, ss)
				}
				span.MoveTo(dst.AppendEmpty())
				n++
			}
			dst = ptrace.SpanSlice{}
		}
	}
	if n > 0 {
		out = append(out, cur)
	}
	return out
}

// appendScope adds to td a copy of rs's resource and ss's scope and returns its span slice.
func appendScope(td ptrace.Traces, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) ptrace.SpanSlice {
	nrs := td.ResourceSpans().AppendEmpty()
	rs.Resource().CopyTo(nrs.Resource())
	nrs.SetSchemaUrl(rs.SchemaUrl())
	nss := nrs.ScopeSpans().AppendEmpty()
	ss.Scope().CopyTo(nss.Scope())
	nss.SetSchemaUrl(ss.SchemaUrl())
	return nss.Spans()
}
