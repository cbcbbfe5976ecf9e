package toolspan

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

const (
	startNanos = 1_000_000_000
	endNanos   = 2_000_000_000
)

// newSpan builds an ended span named name carrying attrs.
func newSpan(t testing.TB, name string, attrs map[string]any) ptrace.Span {
	t.Helper()
	s := ptrace.NewSpan()
	s.SetName(name)
	s.SetStartTimestamp(startNanos)
	s.SetEndTimestamp(endNanos)
	plain := map[string]any{}
	for k, v := range attrs {
		// A key `event:NAME:key` is attribute key of an event NAME, as an event source
		// reads it.
		if rest, ok := strings.CutPrefix(k, attrsource.EventPrefix); ok {
			name, key, _ := strings.Cut(rest, ":")
			ev := s.Events().AppendEmpty()
			ev.SetName(name)
			require.NoError(t, ev.Attributes().FromRaw(map[string]any{key: v}))
			continue
		}
		plain[k] = v
	}
	require.NoError(t, s.Attributes().FromRaw(plain))
	return s
}

func extract(t testing.TB, name string, attrs map[string]any) Attempt {
	t.Helper()
	return NewExtractor(DefaultConfig(), nil, true).Extract(newSpan(t, name, attrs), pcommon.NewResource())
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func hmacSHA(key, s string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

func TestEveryDefaultRecognitionRuleHasAHitAndANearMiss(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	for _, r := range DefaultConfig().ToolSpans {
		var hit, miss ptrace.Span
		switch {
		case r.Attribute != "" && r.Value != "":
			hit = newSpan(t, "span", map[string]any{r.Attribute: r.Value})
			miss = newSpan(t, "span", map[string]any{r.Attribute: r.Value + "_x"})
		case r.Attribute != "":
			hit = newSpan(t, "span", map[string]any{r.Attribute: "anything"})
			miss = newSpan(t, "span", map[string]any{r.Attribute + "_x": "anything"})
		case r.SpanName != "":
			hit = newSpan(t, r.SpanName, nil)
			miss = newSpan(t, r.SpanName+"X", nil)
		case r.SpanNamePrefix != "":
			hit = newSpan(t, r.SpanNamePrefix+" lookup", nil)
			miss = newSpan(t, r.SpanNamePrefix[1:]+" lookup", nil)
		default:
			t.Fatalf("rule %+v sets nothing", r)
		}
		t.Run(fmt.Sprintf("%+v", r), func(t *testing.T) {
			assert.True(t, x.IsToolSpan(hit), "hit %q %v", hit.Name(), hit.Attributes().AsRaw())
			assert.False(t, x.IsToolSpan(miss), "near miss %q %v", miss.Name(), miss.Attributes().AsRaw())
		})
	}
}

func TestRecognitionOfInstrumentationShapes(t *testing.T) {
	cases := []struct {
		name  string
		span  string
		attrs map[string]any
		want  bool
	}{
		{"genai execute_tool", "execute_tool get_weather", map[string]any{"gen_ai.operation.name": "execute_tool"}, true},
		{"genai chat is not a tool span", "chat gpt-5", map[string]any{"gen_ai.operation.name": "chat"}, false},
		{"genai invoke_agent is not a tool span", "invoke_agent planner", map[string]any{"gen_ai.operation.name": "invoke_agent"}, false},
		{"genai agent_step is not a tool span", "step 1", map[string]any{"gen_ai.operation.name": "agent_step"}, false},
		{"mastra tool_call", "tool: lookup", map[string]any{"mastra.span.type": "tool_call"}, true},
		{"mastra agent_run is not", "agent run", map[string]any{"mastra.span.type": "agent_run"}, false},
		{"mcp tools/call", "tools/call search_docs", map[string]any{"mcp.method.name": "tools/call"}, true},
		{"mcp tools/list is not", "tools/list", map[string]any{"mcp.method.name": "tools/list"}, false},
		{"mcp initialize is not", "initialize", map[string]any{"mcp.method.name": "initialize"}, false},
		{"openllmetry tool", "get_forecast.tool", map[string]any{"traceloop.span.kind": "tool"}, true},
		{"openllmetry workflow is not", "agent.workflow", map[string]any{"traceloop.span.kind": "workflow"}, false},
		{"openinference TOOL", "check_inventory", map[string]any{"openinference.span.kind": "TOOL"}, true},
		{"openinference LLM is not", "ChatCompletion", map[string]any{"openinference.span.kind": "LLM"}, false},
		{"a rule's value matches in any case", "check_inventory", map[string]any{"openinference.span.kind": "tool"}, true},
		{"a rule's value matches with white space around it", "check_inventory", map[string]any{"openinference.span.kind": " TOOL\n"}, true},
		{"a value that only contains the rule's value is not", "check_inventory", map[string]any{"openinference.span.kind": "TOOLS"}, false},
		{"a span name rule matches in any case and trimmed", " AI.toolcall ", nil, true},
		{"a span name prefix matches in any case", "mcp request: TOOLS/CALL lookup", nil, true},
		{"vercel v6 ai.toolCall", "ai.toolCall", map[string]any{"ai.toolCall.name": "x"}, true},
		{"span named ai.toolCallX is not", "ai.toolCallX", nil, false},
		{"vercel ai.generateText is not", "ai.generateText", nil, false},
		{"claude_code.tool", "claude_code.tool", nil, true},
		{"claude_code.tool.execution child is not", "claude_code.tool.execution", nil, false},
		{"logfire MCP request tools/call", "MCP request: tools/call lookup_order", nil, true},
		{"logfire MCP request tools/list is not", "MCP request: tools/list", nil, false},
		{"attempt record tool_name attribute", "pay", map[string]any{"tool_name": "charge_card"}, true},
		{"tool_name with an empty value still counts as present", "pay", map[string]any{"tool_name": ""}, true},
		{"tool.name alone is not a tool span", "lookup", map[string]any{"tool.name": "lookup"}, false},
		{"plain span", "GET /orders", map[string]any{"http.request.method": "GET"}, false},
		{"attribute holding a map is compared as its JSON text", "x", map[string]any{"gen_ai.operation.name": map[string]any{"a": 1}}, false},
	}
	x := NewExtractor(DefaultConfig(), nil, true)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, x.IsToolSpan(newSpan(t, c.span, c.attrs)))
		})
	}
}

func TestToolNameFromSpanNameAffixes(t *testing.T) {
	cfg := DefaultConfig()
	for _, p := range cfg.ToolNamePrefixes {
		t.Run("prefix "+p, func(t *testing.T) {
			assert.Equal(t, "lookup", extract(t, p+"lookup", nil).ToolName)
			a := extract(t, p, nil)
			assert.Empty(t, a.ToolName, "the prefix alone names no tool")
			assert.False(t, a.Has(FieldToolName))
		})
	}
	for _, sfx := range cfg.ToolNameSuffixes {
		t.Run("suffix "+sfx, func(t *testing.T) {
			assert.Equal(t, "lookup", extract(t, "lookup"+sfx, nil).ToolName)
			assert.Empty(t, extract(t, sfx, nil).ToolName, "the suffix alone names no tool")
		})
	}
	cases := []struct{ span, want string }{
		{"MCP request: tools/call lookup_order", "lookup_order"},
		{"MCP send tools/call search_docs", "search_docs"},
		{"tools/call search_docs", "search_docs"},
		{"execute_tool get_weather", "get_weather"},
		{"execute_tool   get_weather  ", "get_weather"},
		{"execute_tool    ", ""},
		{"get_forecast.tool", "get_forecast"},
		{"MCP request: tools/call", ""},
		{"tools/list", ""},
		{"execute_toolget_weather", ""},
		{"get_forecast.tools", ""},
	}
	for _, c := range cases {
		t.Run(c.span, func(t *testing.T) {
			a := extract(t, c.span, nil)
			assert.Equal(t, c.want, a.ToolName)
			assert.Equal(t, c.want != "", a.Has(FieldToolName))
		})
	}
	t.Run("an attribute wins over the span name", func(t *testing.T) {
		assert.Equal(t, "attr_name", extract(t, "execute_tool span_name", map[string]any{"gen_ai.tool.name": "attr_name"}).ToolName)
	})
	t.Run("an empty attribute falls back to the span name", func(t *testing.T) {
		assert.Equal(t, "span_name", extract(t, "execute_tool span_name", map[string]any{"gen_ai.tool.name": ""}).ToolName)
	})
}

func TestOutcomeOfToolSpans(t *testing.T) {
	mcpErr := `{"content":[{"type":"text","text":"city not found"}],"isError":true}`
	cases := []struct {
		name       string
		span       string
		attrs      map[string]any
		code       ptrace.StatusCode
		message    string
		notEnded   bool
		overrideOK bool
		want       outcome.Status
		wantRemap  *outcome.Remap
		explicit   bool
	}{
		{name: "MCP unset with isError result: error, remap sets error.type",
			span: "tools/call get_weather", attrs: map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.call.result": mcpErr},
			want: outcome.Error, wantRemap: &outcome.Remap{SetErrorType: true, Description: "city not found"}},
		{name: "MCP isError with error.type already set keeps it",
			span: "tools/call get_weather", attrs: map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.call.result": mcpErr, "error.type": "tool_error"},
			want: outcome.Error, wantRemap: &outcome.Remap{SetErrorType: false, Description: "city not found"}},
		{name: "MCP isError already ERROR: no remap",
			span: "tools/call x", attrs: map[string]any{"mcp.method.name": "tools/call", "gen_ai.tool.call.result": mcpErr}, code: ptrace.StatusCodeError,
			want: outcome.Error},
		{name: "OK with isError result, override on",
			span: "execute_tool x", attrs: map[string]any{"gen_ai.tool.call.result": mcpErr}, code: ptrace.StatusCodeOk, overrideOK: true,
			want: outcome.Error, wantRemap: &outcome.Remap{SetErrorType: true, Description: "city not found"}},
		{name: "OK with isError result, override off: still an error attempt, no span change",
			span: "execute_tool x", attrs: map[string]any{"gen_ai.tool.call.result": mcpErr}, code: ptrace.StatusCodeOk,
			want: outcome.Error},
		{name: "MCP server error.type without a result",
			span: "tools/call x", attrs: map[string]any{"mcp.method.name": "tools/call", "error.type": "tool_error"},
			want: outcome.Error},
		{name: "logfire response isError",
			span: "MCP request: tools/call lookup_order", attrs: map[string]any{"response": `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"no such order"}],"isError":true}}`},
			want: outcome.Error, wantRemap: &outcome.Remap{SetErrorType: true, Description: "no such order"}},
		{name: "openllmetry output is_error, status OK",
			span: "get_forecast.tool", attrs: map[string]any{"traceloop.entity.output": `{"result":"upstream 503","is_error":true}`}, code: ptrace.StatusCodeOk, overrideOK: true,
			want: outcome.Error, wantRemap: &outcome.Remap{SetErrorType: true, Description: "upstream 503"}},
		{name: "isError false result is ok",
			span: "tools/call x", attrs: map[string]any{"gen_ai.tool.call.result": `{"content":[],"isError":false}`},
			want: outcome.OK},
		{name: "status ERROR with a timeout message",
			span: "execute_tool x", code: ptrace.StatusCodeError, message: "request timed out after 30s",
			want: outcome.Timeout},
		{name: "mastra ERROR error.type unknown",
			span: "tool", attrs: map[string]any{"mastra.span.type": "tool_call", "error.type": "unknown"}, code: ptrace.StatusCodeError,
			want: outcome.Error},
		{name: "claude code success false",
			span: "claude_code.tool", attrs: map[string]any{"tool_name": "WebFetch", "success": "false"},
			want: outcome.Error},
		{name: "claude code success bool false",
			span: "claude_code.tool", attrs: map[string]any{"success": false},
			want: outcome.Error},
		{name: "claude code success true",
			span: "claude_code.tool", attrs: map[string]any{"success": "true"},
			want: outcome.OK},
		{name: "claude code success TRUE in any case",
			span: "claude_code.tool", attrs: map[string]any{"success": "True"},
			want: outcome.OK},
		{name: "attempt record status timeout", span: "pay", attrs: map[string]any{"tool_name": "charge_card", "status": "timeout"},
			want: outcome.Timeout, explicit: true},
		{name: "attempt record status ok beats span ERROR", span: "pay", attrs: map[string]any{"tool_name": "charge_card", "status": "ok"}, code: ptrace.StatusCodeError,
			want: outcome.OK, explicit: true},
		{name: "attempt record empty status is unknown", span: "pay", attrs: map[string]any{"status": ""},
			want: outcome.Unknown, explicit: true},
		{name: "not ended is unknown", span: "execute_tool x", notEnded: true, want: outcome.Unknown},
		{name: "external side effect, unset, no result: unknown", span: "pay", attrs: map[string]any{"side_effect": "External"},
			want: outcome.Unknown},
		{name: "external side effect with a result: ok", span: "pay", attrs: map[string]any{"side_effect": "external", "tool_response": "done"},
			want: outcome.OK},
		{name: "unset with nothing: ok", span: "execute_tool x", want: outcome.OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSpan(t, c.span, c.attrs)
			s.Status().SetCode(c.code)
			s.Status().SetMessage(c.message)
			if c.notEnded {
				s.SetEndTimestamp(0)
			}
			a := NewExtractor(DefaultConfig(), nil, c.overrideOK).Extract(s, pcommon.NewResource())
			assert.Equal(t, c.want.String(), a.Status.String())
			assert.Equal(t, c.wantRemap, a.Remap)
			assert.Equal(t, c.explicit, a.ExplicitStatus)
			assert.Equal(t, c.explicit, a.Has(FieldStatus), "only the explicit outcome field carries a status")
		})
	}
}

func TestRunIDAndReadAssetFromAnySpan(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	agent := newSpan(t, "invoke_agent planner", map[string]any{"gen_ai.conversation.id": "conv-1", "retrystorm.read.asset": "orders.csv"})
	assert.Equal(t, "conv-1", x.RunID(agent))
	assert.Equal(t, "orders.csv", x.ReadAsset(agent))
	plain := newSpan(t, "GET /", nil)
	assert.Empty(t, x.RunID(plain))
	assert.Empty(t, x.ReadAsset(plain))
}

func TestInstrumentationShapes(t *testing.T) {
	oslo := sha(`{"city":"Oslo"}`)
	cases := []struct {
		name           string
		span           string
		attrs          map[string]any
		tool, callID   string
		argsHash       string
		recognisedByIt bool
	}{
		{"genai semconv", "execute_tool get_weather", map[string]any{
			"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
			"gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": `{"city":"Oslo"}`,
		}, "get_weather", "call_1", oslo, true},
		{"mastra", "tool lookup", map[string]any{
			"mastra.span.type": "tool_call", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_2",
			"gen_ai.tool.call.arguments": map[string]any{"city": "Oslo"},
		}, "lookup", "call_2", oslo, true},
		{"mcp semconv client", "MCP send tools/call search_docs", map[string]any{
			"mcp.method.name": "tools/call", "jsonrpc.request.id": "5",
		}, "search_docs", "", "", true},
		{"openllmetry mcp", "get_forecast.tool", map[string]any{
			"traceloop.span.kind": "tool", "traceloop.entity.name": "get_forecast",
			"traceloop.entity.input": `{"tool_name":"get_forecast","arguments":{"city":"Oslo"}}`,
		}, "get_forecast", "", oslo, true},
		{"openinference", "check_inventory", map[string]any{
			"openinference.span.kind": "TOOL", "tool.name": "check_inventory", "tool.id": "call_3",
			"input.value": `{"city":"Oslo"}`,
		}, "check_inventory", "call_3", oslo, true},
		{"vercel v6", "ai.toolCall", map[string]any{
			"ai.toolCall.name": "get_weather", "ai.toolCall.id": "call_4", "ai.toolCall.args": `{"city":"Oslo"}`,
		}, "get_weather", "call_4", oslo, true},
		{"claude code", "claude_code.tool", map[string]any{
			"tool_name": "WebFetch", "tool_use_id": "toolu_1", "gen_ai.tool.call.id": "toolu_1", "tool_input": `{"city":"Oslo"}`,
		}, "WebFetch", "toolu_1", oslo, true},
		{"logfire mcp", "MCP request: tools/call lookup_order", map[string]any{
			"request": `{"method":"tools/call","params":{"name":"lookup_order","arguments":{"city":"Oslo"}}}`,
		}, "lookup_order", "", oslo, true},
		{"attempt record", "charge", map[string]any{
			"tool_name": "charge_card", "span_id": "span_19", "args_hash": "abc123",
		}, "charge_card", "span_19", "abc123", true},
	}
	x := NewExtractor(DefaultConfig(), nil, true)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSpan(t, c.span, c.attrs)
			assert.Equal(t, c.recognisedByIt, x.IsToolSpan(s))
			a := x.Extract(s, pcommon.NewResource())
			assert.Equal(t, c.tool, a.ToolName)
			assert.Equal(t, c.callID, a.CallID)
			assert.Equal(t, c.argsHash, a.ArgsHash)
		})
	}
	t.Run("jsonrpc.request.id is never a call id", func(t *testing.T) {
		a := extract(t, "tools/call x", map[string]any{"mcp.method.name": "tools/call", "jsonrpc.request.id": "9"})
		assert.Empty(t, a.CallID)
		assert.False(t, a.Has(FieldCallID))
	})
}

// TestHashedTextsAreWhatCopiesCarry: HashedTexts names the text an SDK copies of a payload
// into messages, whose copies are marked with the attempt's hash: a string read whole or a
// string element at a path (the hash is the text's digest), or the one string of an array
// at a path (OpenLLMetry's LangChain arguments {"args":["<JSON>"]}: the hash is of the
// array, and the text is Listed). Not a map, an array of more than one element, or a hash
// the span gave. An absent
// path falls through to the next source, as the hash does.
func TestHashedTextsAreWhatCopiesCarry(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	hasher := payload.NewHasher(nil)
	const callArgs = `{"customer_id":"cus_Xe7Nb4Gu","email":"amara@example.com"}`
	oneArg, _ := json.Marshal(map[string]any{"args": []string{callArgs}})
	twoArgs, _ := json.Marshal(map[string]any{"args": []string{callArgs, "second"}})
	toolMessage := `{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"{\"charge_id\":\"ch_1\"}","tool_call_id":"call_1"}}`
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		// wantArgs and wantRslt are the texts; digest says each is the Hasher.TextDigest digest.
		wantArgs, wantRslt string
		digest             bool
	}{
		{"strings read whole", map[string]any{"gen_ai.tool.name": "search", "gen_ai.tool.call.arguments": `{"q":"card 4111 1111"}`, "gen_ai.tool.call.result": `{"hits":[1,2]}`}, `{"q":"card 4111 1111"}`, `{"hits":[1,2]}`, true},
		{"a string element at a path", map[string]any{"tool.name": "charge", "output.value": map[string]any{"output": map[string]any{"kwargs": map[string]any{"content": `{"charge_id":"ch_1"}`}}}}, "", `{"charge_id":"ch_1"}`, true},
		{"a text element at a path", map[string]any{"tool.name": "charge", "output.value": `{"output":{"kwargs":{"content":"charged ch_1 on card 4111"}}}`}, "", "charged ch_1 on card 4111", true},
		{"a string element in a JSON string document", map[string]any{"traceloop.entity.name": "charge", "traceloop.entity.output": toolMessage}, "", `{"charge_id":"ch_1"}`, true},
		{"an object element at a path", map[string]any{"gen_ai.tool.name": "search", "request": `{"params":{"name":"search","arguments":{"q":"x"}}}`, "response": `{"result":{"ok":true}}`}, "", "", true},
		{"the one string of an array", map[string]any{"traceloop.entity.name": "lookup", "traceloop.entity.input": string(oneArg)}, callArgs, "", false},
		{"an array of two", map[string]any{"traceloop.entity.name": "lookup", "traceloop.entity.input": string(twoArgs)}, "", "", false},
		{"a map", map[string]any{"gen_ai.tool.name": "search", "gen_ai.tool.call.arguments": map[string]any{"q": "x"}}, "", "", true},
		{"hashes given", map[string]any{"gen_ai.tool.name": "search", "gen_ai.tool.call.arguments": `{"q":"x"}`, "args_hash": "given", "gen_ai.tool.call.result": "plain text", "result_hash": "given"}, "", "", true},
		{"no payload", map[string]any{"gen_ai.tool.name": "search"}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			span := newSpan(t, "execute_tool search", map[string]any{"gen_ai.operation.name": "execute_tool"})
			require.NoError(t, span.Attributes().FromRaw(merged(map[string]any{"gen_ai.operation.name": "execute_tool"}, tc.attrs)))
			a := x.Extract(span, pcommon.NewResource())
			args, result := x.HashedTexts(&a)
			assert.Equal(t, tc.wantArgs, args.Text, "args text")
			assert.Equal(t, tc.wantRslt, result.Text, "result text")
			if args.Text != "" {
				require.NotEmpty(t, a.ArgsHash)
				assert.Equal(t, tc.digest, a.ArgsHash == hasher.TextDigest(args.Text), "args hash is the text's digest")
				assert.Equal(t, !tc.digest, args.Listed, "args text listed")
			}
			if result.Text != "" {
				require.NotEmpty(t, a.ResultHash)
				assert.Equal(t, tc.digest, a.ResultHash == hasher.TextDigest(result.Text), "result hash is the text's digest")
				assert.Equal(t, !tc.digest, result.Listed, "result text listed")
			}
		})
	}
}

func merged(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
