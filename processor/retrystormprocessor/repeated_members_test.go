package retrystormprocessor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// TestRepeatedMembersAreReadAsTheToolReadsThem: a JSON document may repeat a member, and
// every JSON parser a tool runs on hands it the last one. A path source (key#a.b) reads that
// one for the hash, and redaction hunts the values of every member: neither the first nor
// the last card number reaches the backend, in the span's own name, status, URL or
// exception, or in a model span that copies the arguments.
func TestRepeatedMembersAreReadAsTheToolReadsThem(t *testing.T) {
	const first, last = "4111111111111111", "5500005555555559"
	firstArgs, lastArgs := `{"card":"`+first+`","amount":42}`, `{"card":"`+last+`","amount":42}`
	cases := map[string]map[string]any{
		"OpenLLMetry entity input with two arguments members": {
			"traceloop.span.kind":    "tool",
			"traceloop.entity.name":  "charge_card",
			"traceloop.entity.input": `{"arguments":` + firstArgs + `,"kwargs":{},"arguments":` + lastArgs + `}`,
		},
		"MCP request with two params members": {
			"mcp.method.name": "tools/call",
			"request": `{"jsonrpc":"2.0","id":7,"method":"tools/call",` +
				`"params":{"name":"charge_card","arguments":` + firstArgs + `},` +
				`"params":{"name":"charge_card","arguments":` + lastArgs + `}}`,
		},
	}
	for name, attrs := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			h := newHarness(t, cfg, nil)
			b := buffertest.NewSpanBuilder(buffertest.TraceID(40))
			root := b.Root()
			tool := b.Span("charge_card "+last, root.SpanID(), 100, 300, attrs)
			tool.Status().SetCode(ptrace.StatusCodeError)
			tool.Status().SetMessage("card " + last + " declined")
			ev := tool.Events().AppendEmpty()
			ev.SetName("exception")
			ev.Attributes().PutStr("exception.message", "declined: "+last)
			b.Span("POST /charges", tool.SpanID(), 110, 290, map[string]any{
				"url.full": "https://pay.example/charges?card=" + last,
			})
			b.Span("chat model", root.SpanID(), 400, 900, map[string]any{
				"gen_ai.operation.name": "chat",
				"gen_ai.output.messages": `[{"role":"assistant","parts":[{"type":"text","content":"charged ` +
					last + ` and tried ` + first + `"}]}]`,
			})
			h.Consume(b.Traces)
			h.Advance(cfg.RootGrace + time.Second)

			out := h.Sink.AllTraces()
			require.NotEmpty(t, out, "the failed call's trace is kept")
			text := buffertest.AllStrings(out)
			require.NotContains(t, text, last, "the last member's card, the one the tool read")
			require.NotContains(t, text, first, "the first member's card")
			want := payload.NewHasher(nil).TextDigest(lastArgs)
			require.Equal(t, []string{want}, buffertest.AttrValues(out, stormrecord.AttrArgsHash),
				"the arguments hash is the last member's")
		})
	}
}
