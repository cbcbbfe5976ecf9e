package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"iter"
	"math/bits"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A spanSet holds the spans of one trace where the request that brought them left them.
// Cutting a request by trace moves no span: pdata cannot split a span slice without a new
// span struct for every span moved, and most traces are dropped. A span is moved once, into
// the outgoing batch, when its trace is kept; a dropped trace's spans are never moved, and
// go with the set.
//
// The set holds each span by its handle, never the request: once every trace of a request
// is decided, nothing of the request is left in memory.
type spanSet struct {
	parts []part
	n     int
}

// part is the spans of one trace under one origin, in arrival order.
type part struct {
	origin *origin
	spans  []ptrace.Span
}

// resourceOrigin is a copy of a request's resource, made once per ResourceSpans with spans,
// shared read-only by every trace (on every shard) with spans under it.
type resourceOrigin struct {
	rs ptrace.ResourceSpans // the resource and its schema URL; no scopes
	// size is what the resource adds to the OTLP size of a ResourceSpans.
	size int
}

// origin is a copy of a request's scope, made once per ScopeSpans with spans, shared like
// its resourceOrigin.
type origin struct {
	res *resourceOrigin
	ss  ptrace.ScopeSpans // the scope and its schema URL; no spans
	// size is what the scope adds to the OTLP size of a ScopeSpans.
	size int
}

func newResourceOrigin(rs ptrace.ResourceSpans, sizer *ptrace.ProtoMarshaler) *resourceOrigin {
	c := ptrace.NewResourceSpans()
	rs.Resource().CopyTo(c.Resource())
	c.SetSchemaUrl(rs.SchemaUrl())
	return &resourceOrigin{rs: c, size: sizer.ResourceSpansSize(c)}
}

func newOrigin(res *resourceOrigin, ss ptrace.ScopeSpans, sizer *ptrace.ProtoMarshaler) *origin {
	c := ptrace.NewScopeSpans()
	ss.Scope().CopyTo(c.Scope())
	c.SetSchemaUrl(ss.SchemaUrl())
	return &origin{res: res, ss: c, size: sizer.ScopeSpansSize(c)}
}

// Len is the number of spans in the set.
func (s *spanSet) Len() int { return s.n }

// add appends other's spans to s.
func (s *spanSet) add(other spanSet) {
	s.parts = append(s.parts, other.parts...)
	s.n += other.n
}

// All yields each span with its origin, part by part, in arrival order: the order
// tracespans.All gives the same spans once forwarded.
func (s *spanSet) All() iter.Seq2[tracespans.Origin, ptrace.Span] {
	return func(yield func(tracespans.Origin, ptrace.Span) bool) {
		for _, p := range s.parts {
			o := tracespans.Origin{Resource: p.origin.res.rs.Resource(), Scope: p.origin.ss.Scope()}
			for _, span := range p.spans {
				if !yield(o, span) {
					return
				}
			}
		}
	}
}

// size is the OTLP-encoded size of the set as one request would carry it: what
// ProtoMarshaler.TracesSize gives for the spans once moved by a spanWriter, computed
// without moving them.
func (s *spanSet) size(sizer *ptrace.ProtoMarshaler) int64 {
	total := 0
	for i := 0; i < len(s.parts); {
		res := s.parts[i].origin.res
		rs := res.size
		for ; i < len(s.parts) && s.parts[i].origin.res == res; i++ {
			ss := s.parts[i].origin.size
			for _, span := range s.parts[i].spans {
				ss += field(sizer.SpanSize(span))
			}
			rs += field(ss)
		}
		total += field(rs)
	}
	return int64(total)
}

// field is the OTLP size of an embedded message of size n: tag, length, message.
func field(n int) int { return 1 + (bits.Len64(uint64(n)|1)+6)/7 + n }

// spanWriter moves spans into td under copies of their resource and scope, opening a new
// resource or scope only when the origin changes.
type spanWriter struct {
	td     ptrace.Traces
	res    *resourceOrigin
	origin *origin
	rs     ptrace.ResourceSpans
	dst    ptrace.SpanSlice
}

// reset makes w write into td from a fresh resource.
func (w *spanWriter) reset(td ptrace.Traces) {
	*w = spanWriter{td: td}
}

// move moves span, whose origin is o, to the end of w's traces.
func (w *spanWriter) move(o *origin, span ptrace.Span) {
	if o != w.origin {
		if o.res != w.res {
			w.rs = w.td.ResourceSpans().AppendEmpty()
			o.res.rs.CopyTo(w.rs)
			w.res = o.res
		}
		ss := w.rs.ScopeSpans().AppendEmpty()
		o.ss.CopyTo(ss)
		w.dst, w.origin = ss.Spans(), o
	}
	span.MoveTo(w.dst.AppendEmpty())
}

// ptraceResourceCopy is a private copy of a resource origin's resource, to change.
func ptraceResourceCopy(r *resourceOrigin) ptrace.ResourceSpans {
	c := ptrace.NewResourceSpans()
	r.rs.CopyTo(c)
	return c
}

// ptraceScopeCopy is a private copy of an origin's scope, to change.
func ptraceScopeCopy(o *origin) ptrace.ScopeSpans {
	c := ptrace.NewScopeSpans()
	o.ss.CopyTo(c)
	return c
}
