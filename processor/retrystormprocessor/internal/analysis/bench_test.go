package analysis

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// agentTrace is a realistic 60-span agent trace: an invoke_agent root, 9 steps each with a
// model span, one GenAI tool call with an HTTP send underneath and a database span, and
// one executor storm with three attempts.
func agentTrace(n byte) *traceBuilder {
	b := newTrace(n)
	root := b.span("invoke_agent support", noParent, 0, 10000, agentSpan("support")...)
	step := []spanOpt{attr("gen_ai.operation.name", "agent_step")}
	for s := range 9 {
		at := int64(s * 1000)
		st := b.span(fmt.Sprintf("step %d", s+1), root, at, at+900, step...)
		b.span("chat gpt-4o", st, at+10, at+300, attr("gen_ai.operation.name", "chat"), attr("gen_ai.usage.input_tokens", 812),
			attr("gen_ai.usage.output_tokens", 64), attr("gen_ai.request.model", "gpt-4o"))
		tool := b.span("execute_tool lookup_order", st, at+310, at+800, genaiTool("lookup_order", fmt.Sprintf("call_%d", s),
			fmt.Sprintf(`{"order_id":"A-%d","account":"DE89370400440532013000","fields":["status","total","items"]}`, s),
			attr("gen_ai.tool.call.result", `{"status":"shipped","total":129.5,"items":[{"sku":"X1","qty":2}]}`))...)
		http := b.span("POST", tool, at+320, at+700, kind(ptrace.SpanKindClient), attr("http.request.method", "POST"),
			attr("url.full", "http://127.0.0.1:8080/orders"), attr("http.response.status_code", 200))
		b.span("SELECT orders", http, at+330, at+600, attr("db.system", "postgresql"), attr("db.statement", "SELECT * FROM orders WHERE id=$1"))
	}
	for i := range 3 {
		at := int64(9000 + i*300)
		opts := genaiTool("charge_card", "call_pay", `{"amount":4200,"currency":"EUR"}`, attr("idempotency_key", "idem-1"))
		if i < 2 {
			opts = append(opts, errored)
		}
		b.span("execute_tool charge_card", root, at, at+250, opts...)
	}
	for b.Spans.Len() < 60 {
		b.span("chat gpt-4o", root, 9950, 9990, attr("gen_ai.operation.name", "chat"))
	}
	return b
}

func BenchmarkAnalyzeAgentTrace(b *testing.B) {
	tb := agentTrace(1)
	an := New(DefaultConfig(), nil, stalecache.New(100000))
	spans := tb.Traces.SpanCount()
	b.ReportAllocs()
	for b.Loop() {
		an.Analyze(tb.Traces)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
	b.ReportMetric(float64(spans), "spans/trace")
}
