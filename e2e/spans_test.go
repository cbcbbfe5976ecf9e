//go:build e2e

package e2e

import (
	"crypto/sha256"
	"time"

	"github.com/retrystorm/retrystorm/internal/tracespans"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// spanBuilder writes one trace span by span, under one resource and scope, for tests that
// build spans by hand (tracespans.Builder with the end-to-end tests' helpers).
type spanBuilder struct {
	*tracespans.Builder
}

// newSpanBuilder starts a trace of agentService whose id is derived from name, so tests
// never share one; span ids count up from 1, times start a minute ago.
func newSpanBuilder(name string) *spanBuilder {
	sum := sha256.Sum256([]byte("reliability/" + name))
	var id pcommon.TraceID
	copy(id[:], sum[:16])
	return continueTrace(id, agentService, "reliability", time.Now().Add(-time.Minute))
}

// continueTrace builds more spans of trace id: service and scope name the resource and
// scope they are sent under, base is the time offsets count from.
func continueTrace(id pcommon.TraceID, service, scope string, base time.Time) *spanBuilder {
	return &spanBuilder{tracespans.NewBuilder(id, service, scope, base)}
}

func (b *spanBuilder) traceID() string { return b.TraceID.String() }

// span adds a span with the next span id and returns that id.
func (b *spanBuilder) span(name string, parent pcommon.SpanID, startMS, endMS int64, attrs map[string]any) pcommon.SpanID {
	return b.Span(name, parent, startMS, endMS, attrs).SpanID()
}

// spanWithID adds a span with a chosen id.
func (b *spanBuilder) spanWithID(id pcommon.SpanID, name string, parent pcommon.SpanID, startMS, endMS int64, attrs map[string]any) {
	b.SpanWithID(id, name, parent, startMS, endMS, attrs)
}

// last returns the span added last, to set a status or change ids.
func (b *spanBuilder) last() ptrace.Span { return b.Last() }

func (b *spanBuilder) fail(msg string) {
	b.last().Status().SetCode(ptrace.StatusCodeError)
	b.last().Status().SetMessage(msg)
}

// root adds the invoke_agent root span.
func (b *spanBuilder) root(endMS int64) pcommon.SpanID {
	return b.span("invoke_agent checkout", pcommon.SpanID{}, 0, endMS, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout"})
}

// rootWithID adds an invoke_agent root with a chosen id, lasting 2 s: the trace's last
// span when the spans under it name it as their parent beforehand.
func (b *spanBuilder) rootWithID(id pcommon.SpanID) {
	b.spanWithID(id, "invoke_agent checkout", pcommon.SpanID{}, 0, 2000, map[string]any{"gen_ai.operation.name": "invoke_agent"})
}

// genai adds an OTel GenAI execute_tool attempt.
func (b *spanBuilder) genai(parent pcommon.SpanID, tool, callID, args string, startMS, endMS int64, extra map[string]any) pcommon.SpanID {
	attrs := map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
		"gen_ai.tool.call.id": callID, "gen_ai.tool.call.arguments": args,
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return b.span("execute_tool "+tool, parent, startMS, endMS, attrs)
}

// request copies spans [from, to) of the trace, with its resource and scope, into a
// request of their own.
func (b *spanBuilder) request(from, to int) ptrace.Traces { return b.Request(from, to) }

// stormTrace is a whole trace holding one executor storm: call `call` of `tool` failed,
// then succeeded on its second attempt (class transient_dependency).
func stormTrace(name, tool, args string) *spanBuilder {
	b := newSpanBuilder(name)
	root := b.root(1000)
	b.genai(root, tool, "call_"+name, args, 10, 100, nil)
	b.fail("upstream 503")
	b.genai(root, tool, "call_"+name, args, 200, 300, map[string]any{"gen_ai.tool.call.result": `{"ok":true}`})
	return b
}
