package analysis

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// traceBuilder writes small traces span by span for table tests.
type traceBuilder struct {
	td     ptrace.Traces
	spans  ptrace.SpanSlice
	nextID uint64
	trace  pcommon.TraceID
	base   time.Time
}

func newTrace(traceByte byte) *traceBuilder {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "agent-svc")
	b := &traceBuilder{td: td, spans: rs.ScopeSpans().AppendEmpty().Spans(), base: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	b.trace[0], b.trace[15] = traceByte, 1
	return b
}

type spanOpt func(ptrace.Span)

// span adds a span; startMS/endMS are offsets from the trace base; parent may be empty.
func (b *traceBuilder) span(name string, parent pcommon.SpanID, startMS, endMS int64, opts ...spanOpt) pcommon.SpanID {
	b.nextID++
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], b.nextID)
	s := b.spans.AppendEmpty()
	s.SetName(name)
	s.SetTraceID(b.trace)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(b.base.Add(time.Duration(startMS) * time.Millisecond)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(b.base.Add(time.Duration(endMS) * time.Millisecond)))
	for _, o := range opts {
		o(s)
	}
	return id
}

func attr(k string, v any) spanOpt {
	return func(s ptrace.Span) { _ = s.Attributes().PutEmpty(k).FromRaw(v) }
}

func status(code ptrace.StatusCode, msg string) spanOpt {
	return func(s ptrace.Span) { s.Status().SetCode(code); s.Status().SetMessage(msg) }
}

func kind(k ptrace.SpanKind) spanOpt { return func(s ptrace.Span) { s.SetKind(k) } }

func noEnd() spanOpt { return func(s ptrace.Span) { s.SetEndTimestamp(0) } }

var (
	errored = status(ptrace.StatusCodeError, "boom")
	okay    = status(ptrace.StatusCodeOk, "")
)

func agentSpan(name string) []spanOpt {
	return []spanOpt{attr("gen_ai.operation.name", "invoke_agent"), attr("gen_ai.agent.name", name)}
}

// genaiTool is an OTel GenAI execute_tool span.
func genaiTool(tool, callID, args string, opts ...spanOpt) []spanOpt {
	base := []spanOpt{
		attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", tool),
		attr("gen_ai.tool.call.arguments", args),
	}
	if callID != "" {
		base = append(base, attr("gen_ai.tool.call.id", callID))
	}
	return append(base, opts...)
}
