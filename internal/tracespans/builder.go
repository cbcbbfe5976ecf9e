package tracespans

import (
	"encoding/binary"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Builder writes the spans of one trace into one resource and scope, span by span: the one
// span builder of the unit and end-to-end tests, which wrap it with their domain helpers
// (an agent root, a GenAI tool attempt). Times are millisecond offsets from Base.
type Builder struct {
	Traces  ptrace.Traces
	Spans   ptrace.SpanSlice
	TraceID pcommon.TraceID
	Base    time.Time
	// Numbered is the number of span ids given so far: the next span gets Numbered+1, in
	// the span id's low bytes (big-endian), with IDHigh OR'ed in.
	Numbered uint64
	IDHigh   uint64
}

// NewBuilder starts trace id under a resource with service.name service and a scope named
// scope ("" leaves the name unset).
func NewBuilder(id pcommon.TraceID, service, scope string, base time.Time) *Builder {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	ss := rs.ScopeSpans().AppendEmpty()
	if scope != "" {
		ss.Scope().SetName(scope)
	}
	return &Builder{Traces: td, Spans: ss.Spans(), TraceID: id, Base: base}
}

// NextSpanID numbers the next span id.
func (b *Builder) NextSpanID() pcommon.SpanID {
	b.Numbered++
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], b.Numbered|b.IDHigh)
	return id
}

// Span appends a span with the next span id, from startMS to endMS, with attrs (values as
// pcommon.Value.FromRaw takes them; anything else is a bug in the test and panics).
func (b *Builder) Span(name string, parent pcommon.SpanID, startMS, endMS int64, attrs map[string]any) ptrace.Span {
	return b.SpanWithID(b.NextSpanID(), name, parent, startMS, endMS, attrs)
}

// SpanWithID is Span with a chosen span id.
func (b *Builder) SpanWithID(id pcommon.SpanID, name string, parent pcommon.SpanID, startMS, endMS int64, attrs map[string]any) ptrace.Span {
	s := b.Spans.AppendEmpty()
	s.SetName(name)
	s.SetTraceID(b.TraceID)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetStartTimestamp(b.At(startMS))
	s.SetEndTimestamp(b.At(endMS))
	for k, v := range attrs {
		if err := s.Attributes().PutEmpty(k).FromRaw(v); err != nil {
			panic(fmt.Sprintf("attribute %s: %v", k, err))
		}
	}
	return s
}

// At is the timestamp ms milliseconds after Base.
func (b *Builder) At(ms int64) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(b.Base.Add(time.Duration(ms) * time.Millisecond))
}

// Last is the span appended last.
func (b *Builder) Last() ptrace.Span { return b.Spans.At(b.Spans.Len() - 1) }

// Request copies spans [from, to) with their resource and scope into a request of their own.
func (b *Builder) Request(from, to int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	b.Traces.ResourceSpans().At(0).Resource().CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	b.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Scope().CopyTo(ss.Scope())
	for i := from; i < to; i++ {
		b.Spans.At(i).CopyTo(ss.Spans().AppendEmpty())
	}
	return td
}
