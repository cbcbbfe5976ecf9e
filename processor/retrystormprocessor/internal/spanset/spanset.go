package spanset // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"

// Package spanset holds the spans of one trace where the requests that brought them left
// them: the store holds a trace as a Set, and the verdict reads, annotates, redacts and
// forwards it as one.

import (
	"iter"
	"math/bits"
	"slices"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A Set holds the spans of one trace where the request that brought them left them.
// Cutting a request by trace moves no span: pdata cannot split a span slice without a new
// span struct for every span moved, and most traces are dropped. A span is moved once, into
// the outgoing batch, when its trace is kept; a dropped trace's spans are never moved, and
// go with the set.
//
// The set holds each span by its handle, never the request: once every trace of a request
// is decided, nothing of the request is left in memory.
type Set struct {
	Parts []Part
	n     int
}

// Part is the spans of one trace under one origin, in arrival order.
type Part struct {
	Origin *Origin
	Spans  []ptrace.Span
}

// Resource is a copy of a request's resource, made once per ResourceSpans with spans,
// shared read-only by every trace (on every shard) with spans under it.
type Resource struct {
	RS ptrace.ResourceSpans // the resource and its schema URL; no scopes
	// Size is what the resource adds to the OTLP size of a ResourceSpans.
	Size int
}

// Origin is a copy of a request's scope, made once per ScopeSpans with spans, shared like
// its Resource.
type Origin struct {
	Res *Resource
	SS  ptrace.ScopeSpans // the scope and its schema URL; no spans
	// Size is what the scope adds to the OTLP size of a ScopeSpans.
	Size int
}

func NewResource(rs ptrace.ResourceSpans, sizer *ptrace.ProtoMarshaler) *Resource {
	c := ptrace.NewResourceSpans()
	rs.Resource().CopyTo(c.Resource())
	c.SetSchemaUrl(rs.SchemaUrl())
	return &Resource{RS: c, Size: sizer.ResourceSpansSize(c)}
}

func NewOrigin(res *Resource, ss ptrace.ScopeSpans, sizer *ptrace.ProtoMarshaler) *Origin {
	c := ptrace.NewScopeSpans()
	ss.Scope().CopyTo(c.Scope())
	c.SetSchemaUrl(ss.SchemaUrl())
	return &Origin{Res: res, SS: c, Size: sizer.ScopeSpansSize(c)}
}

// Len is the number of spans in the set.
func (s *Set) Len() int { return s.n }

// Add appends other's spans to s.
func (s *Set) Add(other Set) {
	s.Parts = append(s.Parts, other.Parts...)
	s.n += other.n
}

// All yields each span with its origin, part by part, in arrival order: the order
// tracespans.All gives the same spans once forwarded.
func (s *Set) All() iter.Seq2[tracespans.Origin, ptrace.Span] {
	return func(yield func(tracespans.Origin, ptrace.Span) bool) {
		for _, p := range s.Parts {
			o := tracespans.Origin{Resource: p.Origin.Res.RS.Resource(), Scope: p.Origin.SS.Scope()}
			for _, span := range p.Spans {
				if !yield(o, span) {
					return
				}
			}
		}
	}
}

// Size is the OTLP-encoded size of the set as one request would carry it: what
// ProtoMarshaler.TracesSize gives for the spans once moved by a Writer, computed
// without moving them.
func (s *Set) Size(sizer *ptrace.ProtoMarshaler) int64 {
	total := 0
	for i := 0; i < len(s.Parts); {
		res := s.Parts[i].Origin.Res
		rs := res.Size
		for ; i < len(s.Parts) && s.Parts[i].Origin.Res == res; i++ {
			ss := s.Parts[i].Origin.Size
			for _, span := range s.Parts[i].Spans {
				ss += Field(sizer.SpanSize(span))
			}
			rs += Field(ss)
		}
		total += Field(rs)
	}
	return int64(total)
}

// Field is the OTLP size of an embedded message of size n: tag, length, message.
func Field(n int) int { return 1 + (bits.Len64(uint64(n)|1)+6)/7 + n }

// Writer moves spans into td under copies of their resource and scope, opening a new
// resource or scope only when the origin changes.
type Writer struct {
	td     ptrace.Traces
	res    *Resource
	origin *Origin
	rs     ptrace.ResourceSpans
	dst    ptrace.SpanSlice
}

// Reset makes w write into td from a fresh resource.
func (w *Writer) Reset(td ptrace.Traces) {
	*w = Writer{td: td}
}

// Move moves span, whose origin is o, to the end of w's traces.
func (w *Writer) Move(o *Origin, span ptrace.Span) {
	if o != w.origin {
		if o.Res != w.res {
			w.rs = w.td.ResourceSpans().AppendEmpty()
			o.Res.RS.CopyTo(w.rs)
			w.res = o.Res
		}
		ss := w.rs.ScopeSpans().AppendEmpty()
		o.SS.CopyTo(ss)
		w.dst, w.origin = ss.Spans(), o
	}
	span.MoveTo(w.dst.AppendEmpty())
}

// CopyResource is a private copy of a resource origin's resource, to change.
func CopyResource(r *Resource) ptrace.ResourceSpans {
	c := ptrace.NewResourceSpans()
	r.RS.CopyTo(c)
	return c
}

// CopyScope is a private copy of an origin's scope, to change.
func CopyScope(o *Origin) ptrace.ScopeSpans {
	c := ptrace.NewScopeSpans()
	o.SS.CopyTo(c)
	return c
}

// Piece holds the spans of one trace that one request brought, where the request left
// them (Set).
type Piece struct {
	ID  pcommon.TraceID
	Set Set
}

// Split gives each trace of td the handles of its spans, one part per scope it has
// spans in, without moving a span. Resources and scopes are copied once per request. With
// in, the client annotations of the spans, resources and scopes are taken out on the way
// (each span is met here anyway) and counted in c.
func Split(td ptrace.Traces, in *inbound.Filter, c *inbound.Counts) []Piece {
	var sizer ptrace.ProtoMarshaler
	var pieces []Piece
	index := map[pcommon.TraceID]int{}
	var runs []run
	for _, rs := range td.ResourceSpans().All() {
		var res *Resource
		for _, ss := range rs.ScopeSpans().All() {
			spans := ss.Spans()
			if spans.Len() == 0 {
				continue
			}
			if res == nil {
				if in != nil {
					c.Resource += in.Map(rs.Resource().Attributes())
				}
				res = NewResource(rs, &sizer)
			}
			if in != nil {
				c.Scope += in.Map(ss.Scope().Attributes())
			}
			o := NewOrigin(res, ss, &sizer)
			// SDKs export trace after trace: look each trace up once per run, and size
			// its part once.
			runs = appendRuns(runs[:0], spans)
			for _, r := range runs {
				i, ok := index[r.id]
				if !ok {
					i = len(pieces)
					index[r.id] = i
					pieces = append(pieces, Piece{ID: r.id})
				}
				set := &pieces[i].Set
				if n := len(set.Parts); n == 0 || set.Parts[n-1].Origin != o {
					set.Parts = append(set.Parts, Part{Origin: o})
				}
				p := &set.Parts[len(set.Parts)-1]
				p.Spans = slices.Grow(p.Spans, r.n)
				for k := r.start; k < r.start+r.n; k++ {
					span := spans.At(k)
					if in != nil {
						in.Span(span, c)
					}
					p.Spans = append(p.Spans, span)
				}
				set.n += r.n
			}
		}
	}
	return pieces
}

// run is a stretch of consecutive spans of one trace in a span slice.
type run struct {
	id       pcommon.TraceID
	start, n int
}

func appendRuns(runs []run, spans ptrace.SpanSlice) []run {
	for k := 0; k < spans.Len(); k++ {
		id := spans.At(k).TraceID()
		if n := len(runs); n > 0 && runs[n-1].id == id {
			runs[n-1].n++
			continue
		}
		runs = append(runs, run{id: id, start: k, n: 1})
	}
	return runs
}

// FromTraces is every span of td, which holds one trace, as one set.
func FromTraces(td ptrace.Traces) Set {
	var set Set
	for _, pc := range Split(td, nil, nil) {
		set.Add(pc.Set)
	}
	return set
}

// Take moves the spans of s whose tree nodes are held (the set's order is the tree's;
// count of them are held) out of it, and returns copies of them under the same origins: the originals are
// annotated and redacted with the part, then let go.
func (s *Set) Take(held []bool, count int) *Set {
	copies := ptrace.NewSpanSlice()
	copies.EnsureCapacity(count)
	var rest Set
	i := 0
	for p := range s.Parts {
		from := &s.Parts[p]
		kept := from.Spans[:0]
		for _, span := range from.Spans {
			if !held[i] {
				kept = append(kept, span)
			} else {
				c := copies.AppendEmpty()
				span.CopyTo(c)
				if last := len(rest.Parts) - 1; last >= 0 && rest.Parts[last].Origin == from.Origin {
					rest.Parts[last].Spans = append(rest.Parts[last].Spans, c)
				} else {
					rest.Parts = append(rest.Parts, Part{Origin: from.Origin, Spans: []ptrace.Span{c}})
				}
				rest.n++
			}
			i++
		}
		from.Spans = kept
	}
	s.Parts = slices.DeleteFunc(s.Parts, func(p Part) bool { return len(p.Spans) == 0 })
	s.n -= rest.n
	return &rest
}
