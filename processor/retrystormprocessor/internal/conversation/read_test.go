package conversation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// oneSpanTree is a trace of one model span carrying attrs.
func oneSpanTree(t *testing.T, attrs map[string]any) *grouping.Tree {
	t.Helper()
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetName("chat")
	s.SetSpanID([8]byte{1})
	s.SetStartTimestamp(1)
	s.SetEndTimestamp(2)
	require.NoError(t, s.Attributes().FromRaw(attrs))
	return grouping.NewTree(td)
}

// Every vocabulary the package documents yields the request and the response, with the
// call id, tool, arguments, content and failure each says.
func TestReadFindsRequestsAndResponsesInEveryVocabulary(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		output, input        string
		id, tool, args       string
		content              string
		failed               bool
		idlessResponse, none bool
	}{
		{name: "OpenAI chat",
			output: `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"charge","arguments":"{\"card\":\"4111\"}"}}]}]`,
			input:  `[{"role":"tool","tool_call_id":"c1","content":"{\"ok\":true}"}]`,
			id:     "c1", tool: "charge", args: `{"card":"4111"}`, content: `{"ok":true}`},
		{name: "OpenAI Responses",
			output: `[{"type":"function_call","id":"fc_9","call_id":"c1","name":"charge","arguments":"{\"card\":\"4111\"}"}]`,
			input:  `[{"type":"function_call_output","call_id":"c1","output":"declined"}]`,
			id:     "c1", tool: "charge", args: `{"card":"4111"}`, content: "declined"},
		{name: "Anthropic, a failed result",
			output: `[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"charge","input":{"card":"4111"}}]}]`,
			input:  `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"declined","is_error":true}]}]`,
			id:     "toolu_1", tool: "charge", args: `{"card":"4111"}`, content: "declined", failed: true},
		{name: "Gemini, a function's error",
			output: `{"content":{"parts":[{"functionCall":{"id":"g1","name":"charge","args":{"card":"4111"}}}]}}`,
			input:  `{"contents":[{"parts":[{"functionResponse":{"id":"g1","name":"charge","response":{"error":"declined"}}}]}]}`,
			id:     "g1", tool: "charge", args: `{"card":"4111"}`, content: `{"error":"declined"}`, failed: true},
		{name: "Vercel AI SDK, a typed error output",
			output: `[{"role":"assistant","content":[{"type":"tool-call","toolCallId":"v1","toolName":"charge","input":{"card":"4111"}}]}]`,
			input:  `[{"role":"tool","content":[{"type":"tool-result","toolCallId":"v1","toolName":"charge","output":{"type":"error-text","value":"declined"}}]}]`,
			id:     "v1", tool: "charge", args: `{"card":"4111"}`, content: "declined", failed: true},
		{name: "OTel GenAI parts",
			output: `[{"role":"assistant","parts":[{"type":"tool_call","id":"o1","name":"charge","arguments":{"card":"4111"}}]}]`,
			input:  `[{"role":"tool","parts":[{"type":"tool_call_response","id":"o1","response":{"ok":true}}]}]`,
			id:     "o1", tool: "charge", args: `{"card":"4111"}`, content: `{"ok":true}`},
		{name: "Bedrock and Strands",
			output: `[{"role":"assistant","content":[{"toolUse":{"toolUseId":"b1","name":"charge","input":{"card":"4111"}}}]}]`,
			input:  `[{"role":"user","content":[{"toolResult":{"toolUseId":"b1","status":"error","content":[{"text":"declined"}]}}]}]`,
			id:     "b1", tool: "charge", args: `{"card":"4111"}`, content: `[{"text":"declined"}]`, failed: true},
		{name: "LangChain messages",
			output: `{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"","tool_calls":[{"name":"charge","args":{"card":"4111"},"id":"l1","type":"tool_call"}]}}`,
			input:  `{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"declined","tool_call_id":"l1","status":"error"}}`,
			id:     "l1", tool: "charge", args: `{"card":"4111"}`, content: "declined", failed: true},
		{name: "Genkit parts",
			output: `{"message":{"role":"model","content":[{"toolRequest":{"ref":"k1","name":"charge","input":{"card":"4111"}}}]}}`,
			input:  `{"messages":[{"role":"tool","content":[{"toolResponse":{"ref":"k1","name":"charge","output":{"ok":true}}}]}]}`,
			id:     "k1", tool: "charge", args: `{"card":"4111"}`, content: `{"ok":true}`},
		{name: "a placeholder id is no id",
			output: `[{"type":"tool_call","id":"<not specified>","name":"charge","arguments":{"card":"4111"}}]`,
			input:  `[{"type":"tool_call_response","name":"charge","response":{"ok":true}}]`,
			tool:   "charge", args: `{"card":"4111"}`, content: `{"ok":true}`, idlessResponse: true},
		{name: "a tool definition is no request",
			output: `[{"type":"function","function":{"name":"charge","description":"x","parameters":{"type":"object"}}}]`,
			none:   true},
		{name: "text naming a tool is no request",
			output: `[{"role":"assistant","content":"I will use the charge tool"}]`,
			none:   true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := oneSpanTree(t, map[string]any{"gen_ai.output.messages": tt.output, "gen_ai.input.messages": tt.input})
			c := NewReader().Read(tree, nil, Full)
			if tt.none {
				assert.Empty(t, c.Requests)
				return
			}
			require.Len(t, c.Requests, 1, "%+v", c.Requests)
			r := c.Requests[0]
			assert.Equal(t, tt.id, r.CallID)
			assert.Equal(t, tt.tool, r.Tool)
			assert.True(t, r.HasArgs)
			assert.JSONEq(t, tt.args, r.Args)
			resp, ok := c.ResponseTo(0)
			require.True(t, ok, "no response to the request in %+v", c.Responses)
			assert.Equal(t, tt.content, resp.Content)
			assert.Equal(t, tt.failed, resp.Failed)
			assert.Equal(t, tt.idlessResponse, resp.CallID == "")
			assert.Equal(t, []string{"gen_ai.input.messages", "gen_ai.output.messages"}, sorted(c.MessageKeys[0]))

			skim := NewReader().Read(tree, nil, Skim)
			require.Len(t, skim.Requests, 1, "a skim finds the same request")
			assert.Equal(t, r.CallID, skim.Requests[0].CallID)
			assert.Equal(t, r.Tool, skim.Requests[0].Tool)
			assert.Empty(t, skim.Requests[0].Args, "a skim decodes no arguments")
			assert.Empty(t, skim.Responses, "a skim reads no response")
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// OpenInference flattens a call into one attribute per field; OpenLLMetry too.
func TestReadFindsFlattenedRequests(t *testing.T) {
	tree := oneSpanTree(t, map[string]any{
		"llm.output_messages.0.message.role":                                      "assistant",
		"llm.output_messages.0.message.tool_calls.0.tool_call.id":                 "c1",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.name":      "charge",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": `{"card":"4111"}`,
		"llm.output_messages.0.message.tool_calls.1.tool_call.function.name":      "refund",
		"llm.input_messages.1.message.role":                                       "tool",
		"llm.input_messages.1.message.tool_call_id":                               "c1",
		"llm.input_messages.1.message.content":                                    "declined",
	})
	c := NewReader().Read(tree, nil, Full)
	require.Len(t, c.Requests, 2)
	assert.Equal(t, Request{CallID: "c1", Tool: "charge", Args: `{"card":"4111"}`, HasArgs: true, Seq: 0}, stripped(c.Requests[0]))
	assert.Equal(t, "refund", c.Requests[1].Tool)
	resp, ok := c.Response("c1")
	require.True(t, ok)
	assert.Equal(t, "declined", resp.Content)
}

func stripped(r Request) Request { r.fingerprint = 0; return r }

// Requests are read where a model's output records them; the history later inputs repeat
// is not a second request. Only where no output holds one are inputs read.
func TestReadTakesRequestsFromOutputsThenInputs(t *testing.T) {
	call := `[{"type":"tool_call","id":"c1","name":"charge","arguments":{}}]`
	c := NewReader().Read(oneSpanTree(t, map[string]any{"gen_ai.input.messages": call}), nil, Full)
	require.Len(t, c.Requests, 1, "an SDK that records inputs alone")
	c = NewReader().Read(oneSpanTree(t, map[string]any{"gen_ai.input.messages": call,
		"gen_ai.output.messages": `[{"type":"tool_call","id":"c2","name":"refund","arguments":{}}]`}), nil, Full)
	require.Len(t, c.Requests, 1)
	assert.Equal(t, "c2", c.Requests[0].CallID, "the input's call is history")
}

// Where the trace records no request (content capture off), the tools offered are read.
func TestReadOffersWithoutRequests(t *testing.T) {
	tree := oneSpanTree(t, map[string]any{
		"gen_ai.tool.definitions": `[{"type":"function","name":"charge","parameters":{}},{"type":"function","function":{"name":"refund","parameters":{}}}]`,
		"ai.prompt.tools":         []any{`{"type":"function","name":"lookup","inputSchema":{}}`},
	})
	c := NewReader().Read(tree, nil, Full)
	assert.Empty(t, c.Requests)
	assert.ElementsMatch(t, []string{"charge", "refund", "lookup"}, c.Offers)
}

// One call recorded by two spans (the model's output, then the next call's input, then an
// agent's) is one request, made where it was recorded first; an id-less record of it
// beside or after its record with an id is it too.
func TestRequestsAreDeduplicated(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	add := func(id byte, start, end int, attrs map[string]any) {
		s := spans.AppendEmpty()
		s.SetSpanID([8]byte{id})
		s.SetStartTimestamp(ptraceTime(start))
		s.SetEndTimestamp(ptraceTime(end))
		require.NoError(t, s.Attributes().FromRaw(attrs))
	}
	withID := `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"charge","arguments":"{\"card\": \"4111\"}"}}]}]`
	idless := `[{"name":"charge","args":{"card":"4111"}}]`
	add(1, 0, 100, map[string]any{"output.value": withID})                              // the agent, ending last
	add(2, 10, 20, map[string]any{"gen_ai.output.messages": withID})                    // the model call
	add(3, 30, 40, map[string]any{"gen_ai.output.messages": withID})                    // the next one's history
	add(4, 31, 41, map[string]any{"llm.output.calls": `{"tool_calls":` + idless + `}`}) // id-less copy
	c := NewReader().Read(grouping.NewTree(td), nil, Full)
	require.Len(t, c.Requests, 1, "%+v", c.Requests)
	assert.Equal(t, int32(1), c.Requests[0].Node, "made in the span that ended first")
}

func ptraceTime(ms int) pcommon.Timestamp { return pcommon.Timestamp(ms) * 1e6 }

// The rest of a trace whose first part was decided before holds a later model call but
// not the one that made the request: its output asks for the next tool, its input records
// the earlier request as history. Only History mode reads that request; in a whole trace
// it is the output's request again, one request after dedup.
func TestHistoryReadsTheRequestsOfOutputsDecidedBefore(t *testing.T) {
	history := `[{"role":"user","content":"where is my order?"},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"A7\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"{\"status\":\"shipped\"}"}]`
	next := `[{"role":"assistant","tool_calls":[{"id":"c2","type":"function","function":{"name":"track_parcel","arguments":"{\"id\":\"A7\"}"}}]}]`
	first := `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_order","arguments":"{\"id\":\"A7\"}"}}]}]`
	span := func(ss ptrace.SpanSlice, id byte, start uint64, attrs map[string]any) {
		s := ss.AppendEmpty()
		s.SetName("llm")
		s.SetSpanID([8]byte{id})
		s.SetStartTimestamp(pcommon.Timestamp(start))
		s.SetEndTimestamp(pcommon.Timestamp(start + 1))
		require.NoError(t, s.Attributes().FromRaw(attrs))
	}
	tree := func(whole bool) *grouping.Tree {
		td := ptrace.NewTraces()
		ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		if whole {
			span(ss, 1, 10, map[string]any{"llm.request": `[{"role":"user","content":"where is my order?"}]`, "llm.response": first})
		}
		span(ss, 2, 20, map[string]any{"llm.request": history, "llm.response": next})
		return grouping.NewTree(td)
	}
	ids := func(c *Conversation) []string {
		var out []string
		for _, r := range c.Requests {
			out = append(out, r.CallID+" "+r.Tool)
		}
		return out
	}
	rd := NewReader()
	for _, mode := range []Mode{Skim, Full} {
		rest := tree(false)
		assert.Equal(t, []string{"c2 track_parcel"}, ids(rd.Read(rest, nil, mode)), "mode %d without history", mode)
		got := rd.Read(rest, nil, mode|History)
		assert.ElementsMatch(t, []string{"c1 get_order", "c2 track_parcel"}, ids(got), "mode %d with history", mode)
		whole := tree(true)
		got = rd.Read(whole, nil, mode|History)
		assert.ElementsMatch(t, []string{"c1 get_order", "c2 track_parcel"}, ids(got), "mode %d, whole trace", mode)
		for _, r := range got.Requests {
			if r.CallID == "c1" {
				assert.EqualValues(t, 0, r.Node, "the request is made where it was first recorded")
			}
		}
	}
}
