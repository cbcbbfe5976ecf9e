package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// anthropic is a model turn in Anthropic's vocabulary: a tool_use part.
func anthropicUse(id, tool, input string) string {
	return `[{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"` + tool + `","input":` + input + `}]}]`
}

func anthropicResult(id, content string, isError bool) string {
	flag := "false"
	if isError {
		flag = "true"
	}
	return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + content + `","is_error":` + flag + `}]}`
}

// unknownFramework is a run of a framework no recognition rule names: its own span names
// and attribute keys, the model's messages in Anthropic's vocabulary under keys of its
// own. charge_card fails (its span says nothing; the model's tool_result says is_error),
// the model calls it again with the same card, and it succeeds.
func unknownFramework(b *traceBuilder, withLookupSpan bool) {
	root := b.span("workflow run", pcommon.SpanID{}, 0, 1000)
	b.span("llm call", root, 10, 20,
		attr("fw.llm.response", anthropicUse("t1", "lookup_customer", `{"customer":"cus_Qz81"}`)))
	if withLookupSpan {
		b.span("step:lookup_customer", root, 21, 30, attr("fw.input", `{"customer":"cus_Qz81"}`), attr("fw.output", `{"account":"acct_Vx44LpQr"}`))
	}
	b.span("llm call", root, 31, 40,
		attr("fw.llm.request", `[`+anthropicResult("t1", "acct_Vx44LpQr", false)+`]`),
		attr("fw.llm.response", anthropicUse("t2", "charge_card", `{"card":"4111111111111111"}`)))
	b.span("step:charge_card", root, 41, 50, attr("fw.input", `{"card":"4111111111111111"}`))
	b.span("llm call", root, 51, 60,
		attr("fw.llm.request", `[`+anthropicResult("t1", "acct_Vx44LpQr", false)+`,`+anthropicResult("t2", "declined card 4111111111111111", true)+`]`),
		attr("fw.llm.response", anthropicUse("t3", "charge_card", `{"card":"4111111111111111"}`)))
	b.span("step:charge_card", root, 61, 70, attr("fw.input", `{"card":"4111111111111111"}`), attr("fw.output", `{"charge":"ch_8812Kq"}`))
	b.span("llm call", root, 71, 80, attr("fw.llm.request", `[`+anthropicResult("t3", `{\"charge\":\"ch_8812Kq\"}`, false)+`]`))
}

func TestFollowingTheModelFindsAnUnknownFrameworksCalls(t *testing.T) {
	b := newTrace(71)
	unknownFramework(b, true)
	an := New(DefaultConfig(), nil, stalecache.New(100))
	tr := an.Analyze(b.Traces)
	var calls []string
	for _, u := range tr.Units {
		for _, c := range u.Calls {
			for _, a := range c.Attempts {
				calls = append(calls, c.Key+" "+a.ToolName+" "+a.Status.String())
				assert.Contains(t, a.FollowedFields(), "span", "no rule names %q: following found it", a.Span.Name())
				assert.True(t, a.Has(toolspan.FieldArgsHash), "the span's own input is its arguments")
			}
		}
	}
	assert.Equal(t, []string{"t1 lookup_customer ok", "t2 charge_card error", "t3 charge_card ok"}, calls)
	assert.True(t, tr.Signals.ToolError, "the failure only the model's tool_result said")
	assert.True(t, tr.Signals.Storm, "the model's re-call with the same card chains to the failed call")
	assert.Equal(t, 1, tr.Remaps, "the failed span is remapped to ERROR")
	assert.Empty(t, tr.Unseen)
	// The arguments hash as their copies in the model's messages do.
	h := payload.NewHasher(nil)
	assert.Equal(t, h.TextDigest(`{"card":"4111111111111111"}`), tr.Units[1].Attempts()[0].ArgsHash)
	// Redaction learns where the payloads and the messages are.
	assert.NotEmpty(t, tr.ModelPayloads)
	assert.NotEmpty(t, tr.MessageKeys)
	for n, keys := range tr.PayloadKeys {
		assert.Subset(t, []string{"fw.input", "fw.output"}, keys, tr.Tree.Nodes[n].Span.Name())
	}
	checkTriage(t, an, b.Traces, "unknown framework")
}

// What stays unseen is counted, by reason and by the scope of the span it was read from.
func TestFollowingCountsWhatItCannotSee(t *testing.T) {
	b := newTrace(72)
	unknownFramework(b, false) // lookup_customer ran in no span
	an := New(DefaultConfig(), nil, nil)
	tr := an.Analyze(b.Traces)
	assert.Equal(t, map[UnseenKey]int{{Reason: UnseenUnanswered, Scope: ""}: 1}, tr.Unseen)

	// A recognised attempt whose span and model say nothing of its arguments or result.
	b = newTrace(73)
	root := b.span("invoke_agent a", pcommon.SpanID{}, 0, 100, agentSpan("a")...)
	b.span("execute_tool ping", root, 10, 20, attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "ping"))
	tr = an.Analyze(b.Traces)
	assert.Equal(t, map[UnseenKey]int{{Reason: UnseenArgumentsUnread}: 1, {Reason: UnseenResultUnread}: 1}, tr.Unseen)
	checkTriage(t, an, b.Traces, "an attempt without payloads")
}

// A recognised attempt without a call id or arguments of its own takes its request's,
// and a failure said only in the model's response fails it.
func TestFollowingCompletesRecognisedAttempts(t *testing.T) {
	b := newTrace(74)
	root := b.span("invoke_agent a", pcommon.SpanID{}, 0, 100, agentSpan("a")...)
	b.span("chat", root, 1, 5, attr("gen_ai.output.messages", anthropicUse("t9", "charge_card", `{"card":"5500"}`)))
	b.span("execute_tool charge_card", root, 6, 9, attr("gen_ai.operation.name", "execute_tool"))
	b.span("chat", root, 10, 15, attr("gen_ai.input.messages", `[`+anthropicResult("t9", "declined", true)+`]`))
	tr := New(DefaultConfig(), nil, nil).Analyze(b.Traces)
	require.Len(t, tr.Units, 1)
	a := tr.Units[0].Last()
	assert.Equal(t, "t9", a.CallID)
	assert.Equal(t, "charge_card", a.ToolName)
	assert.Equal(t, "error", a.Status.String())
	assert.Equal(t, []string{"call_id", "arguments", "result", "status"}, a.FollowedFields())
	require.NotNil(t, a.Remap)
	assert.Equal(t, toolspan.ModelReport, a.Remap.Report)
}

func TestFollowingTheModelCanBeTurnedOff(t *testing.T) {
	b := newTrace(75)
	unknownFramework(b, true)
	cfg := DefaultConfig()
	cfg.Recognition.FollowModel.Enabled = false
	an := New(cfg, nil, nil)
	tr := an.Analyze(b.Traces)
	assert.Zero(t, tr.ToolAttempts)
	assert.Empty(t, tr.Unseen)
	q := an.Triage(b.Traces)
	assert.True(t, q.Clean, "without following, nothing in the trace is a tool call")
}

// A handoff to another agent is no tool call, and no request left unanswered.
func TestHandoffsAreNoToolCalls(t *testing.T) {
	b := newTrace(76)
	root := b.span("Agent workflow", pcommon.SpanID{}, 0, 100, attr("openinference.span.kind", "AGENT"))
	b.span("response", root, 1, 5, attr("output.value", `[{"type":"function_call","call_id":"h1","name":"transfer_to_payments","arguments":"{}"}]`))
	b.span("handoff to Payments", root, 6, 7, attr("openinference.span.kind", "TOOL"), attr("input.value", "Triage agent name long"))
	tr := New(DefaultConfig(), nil, nil).Analyze(b.Traces)
	assert.Zero(t, tr.ToolAttempts)
	assert.Empty(t, tr.Unseen)
}

// A tool span below a SERVER span under the client's attempt is the server side of that
// attempt: one attempt, failed when the server side failed.
func TestTheServerSideOfACallIsPartOfItsAttempt(t *testing.T) {
	b := newTrace(77)
	root := b.span("agent", pcommon.SpanID{}, 0, 100)
	client := b.span("MCP send tools/call charge_card", root, 1, 50, attr("mcp.method.name", "tools/call"), kind(ptrace.SpanKindClient))
	b.span("tools/call charge_card", client, 2, 40, attr("gen_ai.operation.name", "execute_tool"), attr("gen_ai.tool.name", "charge_card"),
		kind(ptrace.SpanKindServer), attr("error.type", "tool_error"), errored)
	tr := New(DefaultConfig(), nil, nil).Analyze(b.Traces)
	require.Equal(t, 1, tr.ToolAttempts)
	a := tr.Units[0].Last()
	assert.Equal(t, "MCP send tools/call charge_card", a.Span.Name())
	assert.Equal(t, "error", a.Status.String())
	require.NotNil(t, a.Remap)
	assert.Equal(t, ServerSideReport, a.Remap.Report)
	assert.Len(t, tr.ToolSpans, 2, "the server side's payload is redacted with its attempt's")
}

// Turns of one agent (one agent span per turn, one name, one parent) are one agent run:
// a failed call re-called in a later turn is recovered there.
func TestTurnsOfOneAgentAreOneRun(t *testing.T) {
	b := newTrace(78)
	root := b.span("chat", pcommon.SpanID{}, 0, 100)
	turn1 := b.span("proxy.generate_reply", root, 1, 20, attr("openinference.span.kind", "AGENT"))
	b.span("charge_card", turn1, 2, 5, attr("openinference.span.kind", "TOOL"), attr("tool.name", "charge_card"), attr("input.value", `{"card":"1"}`), errored)
	turn2 := b.span("proxy.generate_reply", root, 21, 40, attr("openinference.span.kind", "AGENT"))
	b.span("charge_card", turn2, 22, 25, attr("openinference.span.kind", "TOOL"), attr("tool.name", "charge_card"), attr("input.value", `{"card":"2"}`), attr("output.value", "ok"))
	tr := New(DefaultConfig(), nil, nil).Analyze(b.Traces)
	for _, f := range tr.Findings {
		assert.NotEqual(t, "unrecovered_failure", string(f.Kind), "the next turn recovered the call")
	}
}

// A failure only the model's response says is a timeout when its text names one, as a
// recognised span's failure is.
func TestAFollowedFailureNamingATimeoutIsATimeout(t *testing.T) {
	b := newTrace(79)
	root := b.span("invoke_agent a", pcommon.SpanID{}, 0, 100, agentSpan("a")...)
	b.span("chat", root, 1, 5, attr("gen_ai.output.messages", anthropicUse("t1", "fetch_rates", `{"ccy":"EUR"}`)))
	b.span("execute_tool fetch_rates", root, 6, 9, attr("gen_ai.operation.name", "execute_tool"))
	b.span("chat", root, 10, 15, attr("gen_ai.input.messages", `[`+anthropicResult("t1", "upstream timed out after 30s", true)+`]`))
	tr := New(DefaultConfig(), nil, nil).Analyze(b.Traces)
	require.Len(t, tr.Units, 1)
	assert.Equal(t, "timeout", tr.Units[0].Last().Status.String())
}

// The model's response answers the last execution of its call: an earlier one, retried by
// the framework before the model saw anything, does not take its result.
func TestTheResponseBelongsToTheLastExecution(t *testing.T) {
	b := newTrace(80)
	root := b.span("workflow run", pcommon.SpanID{}, 0, 1000)
	b.span("llm call", root, 10, 20, attr("fw.llm.response", anthropicUse("t1", "charge_card", `{"card":"4111111111111111"}`)))
	b.span("step:charge_card", root, 21, 30, errored)
	b.span("step:charge_card", root, 31, 40)
	b.span("llm call", root, 41, 50, attr("fw.llm.request", `[`+anthropicResult("t1", "ch_8812KqPl", false)+`]`))
	tr := New(DefaultConfig(), nil, nil).Analyze(b.Traces)
	require.Len(t, tr.Units, 1)
	attempts := tr.Units[0].Attempts()
	require.Len(t, attempts, 2, "one call, retried by the framework")
	assert.Empty(t, attempts[0].ResultHash, "the failed first execution returned nothing the model saw")
	assert.NotEmpty(t, attempts[1].ResultHash)
	assert.Equal(t, "executor", string(tr.Units[0].Layer))
}
