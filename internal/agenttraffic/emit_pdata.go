package agenttraffic

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ToPdata converts planned traces into one ptrace.Traces, one ResourceSpans per trace.
func ToPdata(traces []Trace) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := range traces {
		AppendPdata(td, &traces[i])
	}
	return td
}

// TraceToPdata converts one planned trace.
func TraceToPdata(t *Trace) ptrace.Traces {
	td := ptrace.NewTraces()
	AppendPdata(td, t)
	return td
}

// AppendPdata appends t to td as a ResourceSpans carrying service.name and one ScopeSpans.
func AppendPdata(td ptrace.Traces, t *Trace) {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", t.Service)
	rs.Resource().Attributes().PutStr("telemetry.sdk.name", "agentsim")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(t.Scope)
	spans := ss.Spans()
	spans.EnsureCapacity(len(t.Spans))
	for i := range t.Spans {
		putSpan(spans.AppendEmpty(), pcommon.TraceID(t.ID), &t.Spans[i])
	}
}

func putSpan(dst ptrace.Span, traceID pcommon.TraceID, s *Span) {
	dst.SetTraceID(traceID)
	dst.SetSpanID(pcommon.SpanID(s.ID))
	if !s.Parent.IsZero() {
		dst.SetParentSpanID(pcommon.SpanID(s.Parent))
	}
	dst.SetName(s.Name)
	dst.SetKind(pdataKind(s.Kind))
	dst.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
	dst.SetEndTimestamp(pcommon.NewTimestampFromTime(s.End))
	switch s.Status.Code {
	case StatusOK:
		dst.Status().SetCode(ptrace.StatusCodeOk)
	case StatusError:
		dst.Status().SetCode(ptrace.StatusCodeError)
		dst.Status().SetMessage(s.Status.Message)
	}
	putAttrs(dst.Attributes(), s.Attrs)
	if len(s.Events) > 0 {
		dst.Events().EnsureCapacity(len(s.Events))
		for _, e := range s.Events {
			ev := dst.Events().AppendEmpty()
			ev.SetName(e.Name)
			ev.SetTimestamp(pcommon.NewTimestampFromTime(e.Time))
			putAttrs(ev.Attributes(), e.Attrs)
		}
	}
}

func pdataKind(k SpanKind) ptrace.SpanKind {
	switch k {
	case KindClient:
		return ptrace.SpanKindClient
	case KindServer:
		return ptrace.SpanKindServer
	}
	return ptrace.SpanKindInternal
}

func putAttrs(m pcommon.Map, attrs []Attr) {
	m.EnsureCapacity(len(attrs))
	for _, a := range attrs {
		switch a.Value.Kind {
		case ValueString:
			m.PutStr(a.Key, a.Value.Str)
		case ValueInt:
			m.PutInt(a.Key, a.Value.Int)
		case ValueFloat:
			m.PutDouble(a.Key, a.Value.Float)
		case ValueBool:
			m.PutBool(a.Key, a.Value.Bool)
		case ValueStrings:
			sl := m.PutEmptySlice(a.Key)
			sl.EnsureCapacity(len(a.Value.Strs))
			for _, s := range a.Value.Strs {
				sl.AppendEmpty().SetStr(s)
			}
		case ValueMap:
			putAttrs(m.PutEmptyMap(a.Key), a.Value.Map)
		}
	}
}
