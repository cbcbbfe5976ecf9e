package buffertest // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// TraceID is a fixed, random-looking id (splitmix64 of n), so the consistent-sampling
// randomness of test traces is spread like real ids.
func TraceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], splitmix(n))
	binary.BigEndian.PutUint64(id[8:], splitmix(n^0x5bd1e995))
	return id
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// SpanBuilder writes the spans of one trace into one resource and scope of Traces
// (tracespans.Builder with the buffer tests' helpers). Its span ids carry the trace id's
// last byte in their first, so traces built alike do not share span ids.
type SpanBuilder struct {
	*tracespans.Builder
}

// NewSpanBuilder starts the spans of trace id.
func NewSpanBuilder(id pcommon.TraceID) *SpanBuilder {
	b := tracespans.NewBuilder(id, "checkout-agent", "agent-sdk", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	b.IDHigh = uint64(id[15]) << 56
	return &SpanBuilder{b}
}

// Root appends the invoke_agent root span.
func (b *SpanBuilder) Root() ptrace.Span {
	return b.Span("invoke_agent checkout", pcommon.SpanID{}, 0, 10_000, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout",
	})
}

// Tool appends an OTel GenAI execute_tool attempt.
func (b *SpanBuilder) Tool(parent pcommon.SpanID, tool, callID string, startMS int64, failed bool) ptrace.Span {
	s := b.Span("execute_tool "+tool, parent, startMS, startMS+200, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": callID,
		"gen_ai.tool.call.arguments": `{"order":"A-17","amount":42}`,
		"gen_ai.tool.call.result":    `{"ok":true}`,
	})
	if failed {
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("upstream 503")
		s.Attributes().PutStr("gen_ai.tool.call.result", `{"error":"503"}`)
	}
	return s
}

// Straggler starts a piece of trace id arriving late: its span ids follow the trace's own.
func Straggler(id pcommon.TraceID) *SpanBuilder {
	b := NewSpanBuilder(id)
	b.Numbered = 100
	return b
}

// LateAttempt is one more successful attempt of a trace's call, under its root, arriving late.
func LateAttempt(id pcommon.TraceID, tool, callID string, startMS int64) ptrace.Traces {
	b := Straggler(id)
	b.Tool(pcommon.SpanID{1}, tool, callID, startMS, false)
	return b.Traces
}

// CleanTrace is a root and one successful call per tool.
func CleanTrace(id pcommon.TraceID, tools ...string) ptrace.Traces {
	b := NewSpanBuilder(id)
	root := b.Root()
	for i, tool := range tools {
		b.Tool(root.SpanID(), tool, fmt.Sprintf("call-%d", i), int64(100+i*300), false)
	}
	return b.Traces
}

// StormTrace is a root and one charge_card call tried three times (error, error, ok).
func StormTrace(id pcommon.TraceID) ptrace.Traces {
	return ChargeCardTrace(id, true, true, false)
}

// ChargeCardTrace is a root and one charge_card call, one attempt per entry of failed,
// 300 ms apart.
func ChargeCardTrace(id pcommon.TraceID, failed ...bool) ptrace.Traces {
	b := NewSpanBuilder(id)
	root := b.Root()
	for i, f := range failed {
		b.Tool(root.SpanID(), "charge_card", "call-1", int64(100+i*300), f)
	}
	return b.Traces
}

// WithoutRoot removes the root span, so the trace waits for decision_wait.
func WithoutRoot(td ptrace.Traces) ptrace.Traces {
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
		return s.ParentSpanID().IsEmpty()
	})
	return td
}

// SinkSpans groups the spans the sink received by trace id.
func SinkSpans(sink *consumertest.TracesSink) map[pcommon.TraceID][]ptrace.Span {
	out := map[pcommon.TraceID][]ptrace.Span{}
	for _, td := range sink.AllTraces() {
		for _, s := range tracespans.All(td) {
			out[s.TraceID()] = append(out[s.TraceID()], s)
		}
	}
	return out
}

// AllSpans is every span of td, in order.
func AllSpans(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				out = append(out, s)
			}
		}
	}
	return out
}

// AllStrings is every string a backend could show of tds: resources, scopes, span names,
// status messages, tracestate, attributes, events and links.
func AllStrings(tds []ptrace.Traces) string {
	var b strings.Builder
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			writeStrings(&b, rs.Resource().Attributes())
			for _, ss := range rs.ScopeSpans().All() {
				b.WriteString(ss.Scope().Name() + "\n")
				writeStrings(&b, ss.Scope().Attributes())
				for _, s := range ss.Spans().All() {
					b.WriteString(s.Name() + "\n" + s.Status().Message() + "\n" + s.TraceState().AsRaw() + "\n")
					writeStrings(&b, s.Attributes())
					for _, e := range s.Events().All() {
						b.WriteString(e.Name() + "\n")
						writeStrings(&b, e.Attributes())
					}
					for _, l := range s.Links().All() {
						writeStrings(&b, l.Attributes())
					}
				}
			}
		}
	}
	return b.String()
}

func writeStrings(b *strings.Builder, m pcommon.Map) {
	for k, v := range m.All() {
		b.WriteString(k + "=" + v.AsString() + "\n")
	}
}

// AttrValues is the value of attribute key on every span of tds that has it.
func AttrValues(tds []ptrace.Traces, key string) []string {
	var out []string
	for _, td := range tds {
		for _, s := range AllSpans(td) {
			if v, ok := s.Attributes().Get(key); ok {
				out = append(out, v.AsString())
			}
		}
	}
	return out
}

// StaleRead is a charge_card call whose first attempt failed and whose retry returned in
// 2 ms, two minutes after the base: the {"ok":true} result of an earlier trace (such as
// ChargeCardTrace(other, false)), cached.
func StaleRead(id pcommon.TraceID) ptrace.Traces {
	b := NewSpanBuilder(id)
	root := b.Span("invoke_agent checkout", pcommon.SpanID{}, 120_000, 130_000, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "checkout",
	})
	b.Tool(root.SpanID(), "charge_card", "call-1", 120_100, true)
	fast := b.Tool(root.SpanID(), "charge_card", "call-1", 120_400, false)
	fast.SetEndTimestamp(fast.StartTimestamp() + pcommon.Timestamp(2*time.Millisecond))
	return b.Traces
}
