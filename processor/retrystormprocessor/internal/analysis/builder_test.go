package analysis

import (
	"time"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// traceBuilder writes small traces span by span for table tests (tracespans.Builder with
// options for each span).
type traceBuilder struct {
	*tracespans.Builder
}

func newTrace(traceByte byte) *traceBuilder {
	var id pcommon.TraceID
	id[0], id[15] = traceByte, 1
	b := tracespans.NewBuilder(id, "agent-svc", "", time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	return &traceBuilder{b}
}

type spanOpt func(ptrace.Span)

// span adds a span; startMS/endMS are offsets from the trace base; parent may be empty.
func (b *traceBuilder) span(name string, parent pcommon.SpanID, startMS, endMS int64, opts ...spanOpt) pcommon.SpanID {
	s := b.Span(name, parent, startMS, endMS, nil)
	for _, o := range opts {
		o(s)
	}
	return s.SpanID()
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
