package redact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

const (
	card  = "4111111111111111"
	email = "jane.doe@example.com"
	iban  = "DE89370400440532013000"
	token = "tok_visa_4242x9"
)

var toolArgs = `{"card_number":"` + card + `","email":"` + email + `","amount_cents":1299}`
var toolResult = `{"charge_id":"ch_3QkZ9xLm","iban":"` + iban + `","token":"` + token + `"}`

// testSetup is a redaction block and where the tests' tool spans hold their payload, set
// apart from the attribute sources (payloadsOf) to name just what a test needs.
type testSetup struct {
	Config
	PayloadKeys, PayloadSources, IdempotencyKeys []string
}

func (c testSetup) new() *Redactor {
	return newRedactor(c.Config, payloads{keys: c.PayloadKeys, sources: c.PayloadSources, idempotencyKeys: c.IdempotencyKeys}, nil)
}

func testConfig() testSetup {
	return testSetup{
		PayloadKeys:     []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "idempotency_key"},
		PayloadSources:  []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "idempotency_key"},
		IdempotencyKeys: []string{"idempotency_key", "http.request.header.idempotency-key"},
		Config: Config{
			MessageAttributes: []string{"gen_ai.input.messages", "gen_ai.output.messages", "ai.prompt.messages", "ai.response.toolCalls", "mastra.*.output", "input.value", "output.value", "message", "tool_calls"},
			FlattenedMessages: []string{"llm.input_messages", "llm.output_messages", "gen_ai.prompt", "gen_ai.completion"},
			MessageEvents:     []string{"gen_ai.tool.message", "gen_ai.choice", "gen_ai.assistant.message"},
			KeepPromptText:    true,
			MinValueLength:    8,
			MaxHuntedValues:   DefaultMaxValues,
		}}
}

// toolSpan is a tool span carrying toolArgs and toolResult.
func toolSpan() ptrace.Span {
	s := ptrace.NewSpan()
	s.SetName("execute_tool charge_card")
	s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	s.Attributes().PutStr("gen_ai.tool.call.arguments", toolArgs)
	s.Attributes().PutStr("gen_ai.tool.call.result", toolResult)
	return s
}

// redactTrace redacts spans as the processor does: the tool span's values are gathered,
// its payload deleted, then every span redacted.
func redactTrace(t *testing.T, cfg testSetup, tool ptrace.Span, spans ...ptrace.Span) Stats {
	t.Helper()
	return redactTraceExcluding(t, cfg, nil, tool, spans...)
}

// redactTraceExcluding is redactTrace with the trace's tool names, which are not hunted.
func redactTraceExcluding(t *testing.T, cfg testSetup, tools []string, tool ptrace.Span, spans ...ptrace.Span) Stats {
	t.Helper()
	r := cfg.new()
	b := r.Values()
	b.Add(tool)
	for _, name := range tools {
		b.Exclude(name)
	}
	var st Stats
	vals := b.Done(&st)
	r.ToolSpan(tool, &st)
	for _, s := range append([]ptrace.Span{tool}, spans...) {
		r.Span(s, vals, &st)
	}
	return st
}

// spanText is every string of a span, for leak checks.
func spanText(s ptrace.Span) string {
	var b strings.Builder
	b.WriteString(s.Name() + "\n" + s.Status().Message() + "\n")
	writeMap(&b, s.Attributes())
	for _, e := range s.Events().All() {
		b.WriteString(e.Name() + "\n")
		writeMap(&b, e.Attributes())
	}
	for _, l := range s.Links().All() {
		writeMap(&b, l.Attributes())
	}
	return b.String()
}

func writeMap(b *strings.Builder, m pcommon.Map) {
	for k, v := range m.All() {
		b.WriteString(k + "=" + v.AsString() + "\n")
	}
}

func assertNoSecret(t *testing.T, where string, text string) {
	t.Helper()
	for _, s := range []string{card, email, iban, token, "4111111111111111", "jane.doe%40example.com"} {
		if strings.Contains(text, s) {
			t.Errorf("%s still holds %q:\n%s", where, s, text)
		}
	}
}

func hashOf(raw string) string {
	return payload.NewHasher(nil).TextDigest(raw)
}

func TestMessageAttributesKeepStructureAndCarryHash(t *testing.T) {
	cases := map[string]struct {
		key, value string
		// paths are gjson paths of members that must become markers of the args (a) or the
		// result (r) hash; keep are paths that must be unchanged.
		args, result []string
		keep         map[string]string
	}{
		"genai semconv parts": {
			key: "gen_ai.input.messages",
			value: `[{"role":"user","parts":[{"type":"text","content":"charge my card please"}]},` +
				`{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"charge_card","arguments":` + toolArgs + `}]},` +
				`{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":` + toolResult + `}]}]`,
			args:   []string{"1.parts.0.arguments"},
			result: []string{"2.parts.0.response"},
			keep:   map[string]string{"0.parts.0.content": "charge my card please", "1.parts.0.name": "charge_card", "1.parts.0.id": "call_1", "2.role": "tool"},
		},
		"vercel legacy prompt": {
			key: "ai.prompt.messages",
			value: `[{"role":"assistant","content":[{"type":"tool-call","toolCallId":"c1","toolName":"charge_card","input":` + toolArgs + `}]},` +
				`{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"charge_card","output":{"type":"json","value":` + toolResult + `}}]}]`,
			args: []string{"0.content.0.input"},
			keep: map[string]string{"0.content.0.toolName": "charge_card", "1.content.0.toolCallId": "c1"},
		},
		"vercel legacy tool calls with a JSON-string input": {
			key:   "ai.response.toolCalls",
			value: `[{"toolCallId":"c1","toolName":"charge_card","input":` + quote(toolArgs) + `}]`,
			args:  []string{"0.input"},
			keep:  map[string]string{"0.toolName": "charge_card"},
		},
		"openai chat tool_calls and tool message": {
			key: "input.value",
			value: `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"charge_card","arguments":` + quote(toolArgs) + `}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":` + quote(toolResult) + `}]}`,
			args:   []string{"messages.0.tool_calls.0.function.arguments"},
			result: []string{"messages.1.content"},
			keep:   map[string]string{"messages.0.tool_calls.0.function.name": "charge_card"},
		},
		"anthropic and bedrock blocks": {
			key: "output.value",
			value: `[{"type":"tool_use","id":"t1","name":"charge_card","input":` + toolArgs + `},` +
				`{"toolUse":{"toolUseId":"t2","name":"charge_card","input":` + toolArgs + `}},` +
				`{"toolResult":{"toolUseId":"t2","status":"success","content":[{"json":` + toolResult + `}]}}]`,
			args: []string{"0.input", "1.toolUse.input"},
			keep: map[string]string{"1.toolUse.name": "charge_card", "2.toolResult.status": "success"},
		},
		"langchain serialised messages inside a JSON string": {
			key: "output.value",
			value: `{"messages":` + quote(`[{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"","tool_calls":[{"name":"charge_card","args":`+toolArgs+`,"id":"c1","type":"tool_call"}]}},`+
				`{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":`+quote(toolResult)+`,"tool_call_id":"c1","name":"charge_card"}}]`) + `}`,
		},
		"langchain streamed message chunk": {
			key: "output.value",
			value: `{"generations":[[{"text":"","message":{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessageChunk"],"kwargs":{"content":"",` +
				`"tool_call_chunks":[{"type":"tool_call_chunk","index":0,"id":"c1","name":"charge_card","args":` + quote(toolArgs) + `}],` +
				`"tool_calls":[{"name":"charge_card","args":` + toolArgs + `,"id":"c1","type":"tool_call"}]}}}]]}`,
			args: []string{"generations.0.0.message.kwargs.tool_call_chunks.0.args", "generations.0.0.message.kwargs.tool_calls.0.args"},
			keep: map[string]string{"generations.0.0.message.kwargs.tool_call_chunks.0.name": "charge_card", "generations.0.0.message.kwargs.tool_call_chunks.0.id": "c1"},
		},
		"mastra step output by glob": {
			key:   "mastra.model_step.output",
			value: `{"text":"done","toolCalls":[{"type":"tool-call","toolCallId":"c1","toolName":"charge_card","args":` + toolArgs + `}],"toolResults":[{"toolCallId":"c1","result":` + toolResult + `}]}`,
			args:  []string{"toolCalls.0.args"},
			keep:  map[string]string{"text": "done", "toolCalls.0.toolName": "charge_card"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			model := ptrace.NewSpan()
			model.SetName("chat gpt-4o")
			model.Attributes().PutStr(tc.key, tc.value)
			st := redactTrace(t, testConfig(), toolSpan(), model)
			got, ok := model.Attributes().Get(tc.key)
			if !ok {
				t.Fatalf("%s was deleted", tc.key)
			}
			assertNoSecret(t, tc.key, got.Str())
			if !gjson.Valid(got.Str()) {
				t.Fatalf("%s is no longer JSON: %s", tc.key, got.Str())
			}
			for _, p := range tc.args {
				if v := gjson.Get(got.Str(), p).Str; v != Marker(hashOf(toolArgs)) {
					t.Errorf("%s = %q, want the args marker %q", p, v, Marker(hashOf(toolArgs)))
				}
			}
			for _, p := range tc.result {
				if v := gjson.Get(got.Str(), p).Str; v != Marker(hashOf(toolResult)) {
					t.Errorf("%s = %q, want the result marker", p, v)
				}
			}
			for p, want := range tc.keep {
				if v := gjson.Get(got.Str(), p).String(); v != want {
					t.Errorf("%s = %q, want it kept as %q", p, v, want)
				}
			}
			if st.Message == 0 {
				t.Errorf("no message redaction counted: %+v", st)
			}
		})
	}
}

func TestUnparseableMessageDeletedAndCounted(t *testing.T) {
	model := ptrace.NewSpan()
	model.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"tool_call","arguments":{"card":"`+card[:10])
	model.Attributes().PutStr("input.value", "what is the weather in Berlin?")
	st := redactTrace(t, testConfig(), toolSpan(), model)
	if _, ok := model.Attributes().Get("gen_ai.output.messages"); ok {
		t.Error("a message attribute that does not parse was forwarded")
	}
	if v, _ := model.Attributes().Get("input.value"); v.Str() != "what is the weather in Berlin?" {
		t.Errorf("plain prompt text = %q, want it kept", v.Str())
	}
	if st.Unparseable != 1 {
		t.Errorf("Unparseable = %d, want 1", st.Unparseable)
	}
}

// TestTextThatStartsWithABracketIsText: a model's answer that begins with a bracket
// ("[1] …", a Markdown link) is text, not a message structure that failed to parse: it is
// kept (and scrubbed of the payload values it quotes), on a span and in a message event,
// while a structure cut short is still deleted. With prompt text not kept it is replaced
// as any text is.
func TestTextThatStartsWithABracketIsText(t *testing.T) {
	answer := "[1] The charge to card " + card + " went through."
	kept := "[1] The charge to card " + Scrubbed + " went through."
	texts := []string{
		answer,
		"[Paris](https://en.wikipedia.org/wiki/Paris) is the capital of France.",
		`{name} is a placeholder, ["not", "json"] neither`,
	}
	for _, keepText := range []bool{true, false} {
		cfg := testConfig()
		cfg.KeepPromptText = keepText
		model := ptrace.NewSpan()
		for i, text := range texts {
			model.Attributes().PutStr(fmt.Sprintf("output.value.%d", i), text)
		}
		model.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"cut sh`)
		choice := model.Events().AppendEmpty()
		choice.SetName("gen_ai.choice")
		choice.Attributes().PutStr("message", answer)
		cfg.MessageAttributes = append(cfg.MessageAttributes, "output.value.*")
		st := redactTrace(t, cfg, toolSpan(), model)
		assertNoSecret(t, "bracketed text", spanText(model))
		if _, ok := model.Attributes().Get("gen_ai.output.messages"); ok {
			t.Error("a message structure cut short was forwarded")
		}
		if st.Unparseable != 1 {
			t.Errorf("keepText=%v: Unparseable = %d, want 1 (the structure cut short only)", keepText, st.Unparseable)
		}
		for i, text := range texts {
			want := text
			switch {
			case !keepText:
				want = Scrubbed
			case i == 0:
				want = kept
			}
			if v, ok := model.Attributes().Get(fmt.Sprintf("output.value.%d", i)); !ok || v.Str() != want {
				t.Errorf("keepText=%v: output.value.%d = %q (present %v), want %q", keepText, i, v.Str(), ok, want)
			}
		}
		wantEvent := kept
		if !keepText {
			wantEvent = Scrubbed
		}
		if v, _ := choice.Attributes().Get("message"); v.Str() != wantEvent {
			t.Errorf("keepText=%v: the gen_ai.choice message = %q, want %q", keepText, v.Str(), wantEvent)
		}
	}
}

func TestHoldsJSONMember(t *testing.T) {
	for s, want := range map[string]bool{
		`[{"role":"user"`:         true,
		`{"a" : 1`:                true,
		"[{\"a\"\n:":              true,
		`[1] Paris`:               false,
		`[{"ro`:                   false,
		`["a", "b"`:               false,
		`{x} says "hi" and "bye"`: false,
		`he said "no": twice`:     true,
		``:                        false,
	} {
		if got := holdsJSONMember(s); got != want {
			t.Errorf("holdsJSONMember(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestFlattenedMessages(t *testing.T) {
	model := ptrace.NewSpan()
	a := model.Attributes()
	a.PutStr("llm.input_messages.0.message.role", "user")
	a.PutStr("llm.input_messages.0.message.content", "charge it")
	a.PutStr("llm.input_messages.1.message.role", "tool")
	a.PutStr("llm.input_messages.1.message.content", toolResult)
	a.PutStr("llm.output_messages.0.message.tool_calls.0.tool_call.function.name", "charge_card")
	a.PutStr("llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments", toolArgs)
	a.PutStr("gen_ai.prompt.2.role", "tool")
	a.PutStr("gen_ai.prompt.2.content", toolResult)
	a.PutStr("gen_ai.completion.0.tool_calls.0.arguments", toolArgs)
	redactTrace(t, testConfig(), toolSpan(), model)
	assertNoSecret(t, "flattened", spanText(model))
	for k, want := range map[string]string{
		"llm.input_messages.0.message.content":                                    "charge it",
		"llm.input_messages.1.message.content":                                    Marker(hashOf(toolResult)),
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.name":      "charge_card",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": Marker(hashOf(toolArgs)),
		"gen_ai.completion.0.tool_calls.0.arguments":                              Marker(hashOf(toolArgs)),
	} {
		if v, _ := a.Get(k); v.Str() != want {
			t.Errorf("%s = %q, want %q", k, v.Str(), want)
		}
	}
}

func TestMessageEvents(t *testing.T) {
	model := ptrace.NewSpan()
	ev := model.Events().AppendEmpty()
	ev.SetName("gen_ai.tool.message")
	ev.Attributes().PutStr("id", "t1")
	ev.Attributes().PutStr("content", toolResult)
	ch := model.Events().AppendEmpty()
	ch.SetName("gen_ai.choice")
	ch.Attributes().PutStr("message", `{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"charge_card","input":`+toolArgs+`}}]}`)
	st := redactTrace(t, testConfig(), toolSpan(), model)
	assertNoSecret(t, "events", spanText(model))
	if v, _ := ev.Attributes().Get("id"); v.Str() != "t1" {
		t.Errorf("the event's id = %q, want it kept", v.Str())
	}
	if st.Event < 2 {
		t.Errorf("Event = %d, want 2", st.Event)
	}
}

// TestToolSpanMessageEventsKeepTheirMarkers: a tool span's own message events (Strands
// records its arguments in gen_ai.tool.message and its result in gen_ai.choice) carry the
// payload's marker with its hash after the whole span is redacted; a marker starts with a
// bracket, and was once read as a message that did not parse and replaced by a bare
// Scrubbed.
func TestToolSpanMessageEventsKeepTheirMarkers(t *testing.T) {
	result := `[{"text":"{\"charge_id\":\"ch_3QkZ9xLm\",\"token\":\"` + token + `\"}"}]`
	tool := ptrace.NewSpan()
	tool.SetName("execute_tool charge_card")
	call := tool.Events().AppendEmpty()
	call.SetName("gen_ai.tool.message")
	call.Attributes().PutStr("role", "tool")
	call.Attributes().PutStr("content", toolArgs)
	choice := tool.Events().AppendEmpty()
	choice.SetName("gen_ai.choice")
	choice.Attributes().PutStr("message", result)
	redactTrace(t, testConfig(), tool)
	assertNoSecret(t, "tool span", spanText(tool))
	if v, _ := call.Attributes().Get("content"); v.Str() != Marker(hashOf(toolArgs)) {
		t.Errorf("gen_ai.tool.message content = %q, want the arguments' marker", v.Str())
	}
	if v, _ := choice.Attributes().Get("message"); v.Str() != Marker(hashOf(result)) {
		t.Errorf("gen_ai.choice message = %q, want the result's marker", v.Str())
	}
}

// TestMarkersAreNotMarkedAgain: a message that already carries a marker (redacted by a
// first tier of collectors) keeps it, hash and all, when it is redacted again.
func TestMarkersAreNotMarkedAgain(t *testing.T) {
	marked := Marker(hashOf(toolArgs))
	doc := `[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"charge_card","arguments":"` + marked + `"}]}]`
	for _, keepText := range []bool{true, false} {
		cfg := testConfig()
		cfg.KeepPromptText = keepText
		model := ptrace.NewSpan()
		model.Attributes().PutStr("gen_ai.output.messages", doc)
		// A message attribute that is a marker whole (a first tier marked it) is no text.
		model.Attributes().PutStr("output.value", marked)
		ev := model.Events().AppendEmpty()
		ev.SetName("gen_ai.tool.message")
		ev.Attributes().PutStr("role", "tool")
		ev.Attributes().PutStr("content", marked)
		redactTrace(t, cfg, toolSpan(), model)
		if v, _ := model.Attributes().Get("gen_ai.output.messages"); v.Str() != doc {
			t.Errorf("keepText=%v: message = %q, want it as it was", keepText, v.Str())
		}
		if v, _ := model.Attributes().Get("output.value"); v.Str() != marked {
			t.Errorf("keepText=%v: output.value = %q, want %q", keepText, v.Str(), marked)
		}
		if v, _ := ev.Attributes().Get("content"); v.Str() != marked {
			t.Errorf("keepText=%v: event content = %q, want %q", keepText, v.Str(), marked)
		}
	}
}

func TestScrubbingFindsUnlistedCopies(t *testing.T) {
	send := ptrace.NewSpan()
	send.SetName("POST /v1/customers/" + email)
	send.Attributes().PutStr("url.full", "https://api.example.com/v1/customers?email=jane.doe%40example.com")
	send.Attributes().PutStr("custom.blob", `{"nested":"{\"card\":\"`+card+`\"}"}`)
	send.Attributes().PutEmptySlice("http.request.header.idempotency-key").AppendEmpty().SetStr("idem-7781-abcdef")
	send.Status().SetMessage("card " + card + " declined")
	ex := send.Events().AppendEmpty()
	ex.SetName("exception")
	ex.Attributes().PutStr("exception.message", "charge of "+card+" for "+email+" failed")
	link := send.Links().AppendEmpty()
	link.Attributes().PutStr("note", "retry of "+iban)
	tool := toolSpan()
	tool.Attributes().PutStr("idempotency_key", "idem-7781-abcdef")
	tool.Status().SetMessage("declined: " + card)
	st := redactTrace(t, testConfig(), tool, send)
	assertNoSecret(t, "send span", spanText(send))
	assertNoSecret(t, "tool span", spanText(tool))
	if strings.Contains(spanText(send), "idem-7781-abcdef") {
		t.Error("the idempotency key reached the send span's header")
	}
	if st.Scrubbed == 0 || st.IdempotencyKey == 0 {
		t.Errorf("stats = %+v, want scrubbed values and an idempotency key counted", st)
	}
	if !strings.Contains(send.Name(), "POST /v1/customers/"+Scrubbed) {
		t.Errorf("span name = %q, want the rest of it kept", send.Name())
	}
}

func TestShortValuesAreNotHunted(t *testing.T) {
	tool := ptrace.NewSpan()
	tool.Attributes().PutStr("gen_ai.tool.call.arguments", `{"unit":"celsius","city":"Oslo","ok":"yes"}`)
	model := ptrace.NewSpan()
	model.Attributes().PutStr("gen_ai.system", "Oslo is in celsius territory")
	redactTrace(t, testConfig(), tool, model)
	if v, _ := model.Attributes().Get("gen_ai.system"); v.Str() != "Oslo is in celsius territory" {
		t.Errorf("values shorter than the minimum were scrubbed: %q", v.Str())
	}
}

func TestRepeatedAndFlattenedPayloadKeys(t *testing.T) {
	// OTLP allows a key twice in one span; pdata's Put cannot write that, its decoder keeps it.
	doc := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"execute_tool charge_card","attributes":[` +
		`{"key":"gen_ai.tool.call.arguments","value":{"stringValue":` + quote(toolArgs) + `}},` +
		`{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\"card\":\"` + card + `\"}"}},` +
		`{"key":"gen_ai.tool.call.arguments.card","value":{"stringValue":"` + card + `"}},` +
		`{"key":"input.value","value":{"stringValue":"[{\"type\":\"tool_call\",\"arguments\":{}}]"}},` +
		`{"key":"input.value","value":{"stringValue":"[{\"type\":\"tool_call\",\"arguments\":{\"iban\":\"` + iban + `\"}}]"}}]}]}]}]}`
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tool := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if tool.Attributes().Len() != 5 {
		t.Fatalf("the decoder kept %d attributes, want 5 (duplicates included)", tool.Attributes().Len())
	}
	st := redactTrace(t, testConfig(), tool)
	assertNoSecret(t, "tool span", spanText(tool))
	if st.ToolSpan != 3 {
		t.Errorf("ToolSpan = %d, want 3 (both copies of the key and the flattened one)", st.ToolSpan)
	}
	if st.Message != 2 {
		t.Errorf("Message = %d, want both copies of input.value rewritten", st.Message)
	}
}

func TestKeepPromptTextOff(t *testing.T) {
	cfg := testConfig()
	cfg.KeepPromptText = false
	model := ptrace.NewSpan()
	model.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"my private question"}]},{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"charge_card","arguments":{}}]}]`)
	model.Attributes().PutStr("input.value", "my private question")
	redactTrace(t, cfg, toolSpan(), model)
	if strings.Contains(spanText(model), "my private question") {
		t.Errorf("prompt text kept with KeepPromptText off:\n%s", spanText(model))
	}
	v, _ := model.Attributes().Get("gen_ai.input.messages")
	if gjson.Get(v.Str(), "1.parts.0.name").Str != "charge_card" || gjson.Get(v.Str(), "0.role").Str != "user" {
		t.Errorf("roles and tool names must stay: %s", v.Str())
	}
}

func TestAClonedValueSetScrubsLikeTheOriginal(t *testing.T) {
	r := testConfig().new()
	b := r.Values()
	b.Add(toolSpan())
	vals := b.Done(&Stats{})
	if vals.Len() == 0 {
		t.Fatal("no values gathered")
	}
	// A clone kept with a decision scrubs a late span alike.
	late := vals.Clone()
	s, n := late.Scrub("late copy: " + card + " / " + email)
	if n != 2 || strings.Contains(s, card) {
		t.Errorf("Scrub = %q, %d", s, n)
	}
}

// TestSourcesWithAPathHuntOnlyTheirElement: a source reading an element (request#params.arguments)
// deletes the whole attribute from the tool span but hunts only the element's values, so
// the JSON-RPC method and the tool name beside them stay in other spans; excluded values
// (the trace's tool names) are never hunted.
func TestSourcesWithAPathHuntOnlyTheirElement(t *testing.T) {
	cfg := testConfig()
	cfg.PayloadKeys = []string{"request"}
	cfg.PayloadSources = []string{"request#params.arguments"}
	tool := ptrace.NewSpan()
	tool.SetName("MCP request: tools/call query_warehouse")
	tool.Attributes().PutStr("request", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"query_warehouse","arguments":{"sku":"SKU-123456789","note":"query_warehouse twice"}}}`)
	other := ptrace.NewSpan()
	other.SetName("tools/call query_warehouse")
	other.Attributes().PutStr("note", "asked for SKU-123456789 via tools/call")
	r := cfg.new()
	b := r.Values()
	b.Add(tool)
	b.Exclude("query_warehouse")
	vals := b.Done(&Stats{})
	var st Stats
	r.ToolSpan(tool, &st)
	r.Span(other, vals, &st)
	if _, ok := tool.Attributes().Get("request"); ok {
		t.Error("the tool span's request was not deleted")
	}
	if other.Name() != "tools/call query_warehouse" {
		t.Errorf("the tool name was scrubbed from a span name: %q", other.Name())
	}
	if v, _ := other.Attributes().Get("note"); v.Str() != "asked for "+Scrubbed+" via tools/call" {
		t.Errorf("note = %q", v.Str())
	}
}

// TestPathSourcesHuntEveryRepeatedMember: where a document repeats a member on a source's
// path, every JSON parser hands the tool the last one, which is what the hash reads;
// redaction reads every member, the hashed one among them, and hunts each one's values.
func TestPathSourcesHuntEveryRepeatedMember(t *testing.T) {
	const first, last = "SKU-111111111", "SKU-999999999"
	cases := []struct{ key, path, doc string }{
		{"request", "params.arguments", `{"method":"tools/call","params":{"arguments":{"sku":"` + first + `"}},` +
			`"params":{"name":"q","arguments":{"sku":"` + last + `"}}}`},
		{"traceloop.entity.input", "arguments", `{"arguments":{"sku":"` + first + `"},"kwargs":{},"arguments":{"sku":"` + last + `"}}`},
	}
	for _, c := range cases {
		source := c.key + "#" + c.path
		cfg := testConfig()
		cfg.PayloadKeys, cfg.PayloadSources = []string{c.key}, []string{source}
		tool := ptrace.NewSpan()
		tool.Attributes().PutStr(c.key, c.doc)
		r := cfg.new()
		b := r.Values()
		b.Add(tool)
		vals := b.Done(&Stats{})
		for _, sku := range []string{first, last} {
			if !vals.Holds("copied " + sku) {
				t.Errorf("%s: %s is not hunted", source, sku)
			}
		}
		hashed, ok := payload.CanonicalValuePath(pcommon.NewValueStr(c.doc), strings.Split(c.path, "."))
		if !ok || string(hashed) != `{"sku":"`+last+`"}` {
			t.Errorf("%s: the hash reads %s, want the last member", source, hashed)
		}
		var read []string
		for el := range parseSources([]string{source})[0].read(c.key, pcommon.NewValueStr(c.doc)) {
			read = append(read, string(payload.CanonicalValue(el)))
		}
		if len(read) != 2 || read[1] != string(hashed) {
			t.Errorf("%s: redaction reads %q, want both members, the hashed one last", source, read)
		}
	}
}

// TestEscapesOfIsConservative: a form escapesOf says cannot differ never does.
func TestEscapesOfIsConservative(t *testing.T) {
	for _, s := range []string{"plain-value_1.2~", "jane.doe+x@example.com", `a"b\c`, "tab\there", "<b>&amp;", "héllo wörld", "a b/c?d=e;f", "\u2028line", "\xff\xfe bad utf8"} {
		bits := escapesOf(s)
		for i, form := range variants {
			if i > 0 && bits&(1<<i) == 0 && form(s) != s {
				t.Errorf("variant %d of %q is %q, but escapesOf said it cannot differ", i, s, form(s))
			}
		}
	}
}

// TestMessageShapedPayloadHuntsContentNotStructure: a tool's result recorded as the
// message it returns (LangChain's serialized ToolMessage, whole in output.value) is hunted
// for its content, and for text a message in it holds, not for its envelope: a copy of the
// envelope elsewhere keeps its type tags, ids and call id, while the content's values are
// scrubbed wherever they appear. A payload with no message structure is hunted leaf by
// leaf, envelope-like words included.
func TestMessageShapedPayloadHuntsContentNotStructure(t *testing.T) {
	cfg := testConfig()
	cfg.PayloadKeys = []string{"output.value"}
	cfg.PayloadSources = []string{"output.value"}
	toolMessage := `{"output":{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],` +
		`"kwargs":{"status":"success","content":"{\"card_token\":\"` + token + `\"}","tool_call_id":"call_lookup_00042","name":"lookup_customer"}}}`
	subAgent := `[{"role":"assistant","content":"the IBAN on file is ` + iban + `","tool_calls":[{"id":"call_sub_000007","type":"function","function":{"name":"find_account","arguments":"{\"email\":\"` + email + `\"}"}}]}]`
	withArtifact := `{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],` +
		`"kwargs":{"content":"found 1 account","artifact":{"iban":"` + iban + `"},"tool_call_id":"call_lookup_00043","name":"lookup_customer"}}`
	plain := `{"status":"constructor_ok","ref":"langchain_core_v1"}`
	for _, tc := range []struct {
		name, payload string
		hunted, kept  []string
	}{
		{"serialized ToolMessage", toolMessage, []string{token}, []string{"constructor", "langchain_core", "ToolMessage", "call_lookup_00042"}},
		{"ToolMessage with an artifact", withArtifact, []string{iban}, []string{"ToolMessage", "call_lookup_00043"}},
		{"messages with text", subAgent, []string{"the IBAN on file is " + iban, email}, []string{"call_sub_000007", "assistant"}},
		{"no message structure", plain, []string{"constructor_ok", "langchain_core_v1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := ptrace.NewSpan()
			tool.SetName("lookup_customer")
			tool.Attributes().PutStr("output.value", tc.payload)
			other := ptrace.NewSpan()
			other.SetName("chat")
			copied := tc.payload + " " + strings.Join(append(append([]string{}, tc.hunted...), tc.kept...), " ")
			other.Attributes().PutStr("app.note", copied)
			redactTraceExcluding(t, cfg, []string{"lookup_customer"}, tool, other)
			note, _ := other.Attributes().Get("app.note")
			for _, v := range tc.hunted {
				if strings.Contains(note.Str(), v) {
					t.Errorf("payload value %q survived: %s", v, note.Str())
				}
			}
			for _, v := range tc.kept {
				if strings.Count(note.Str(), v) != strings.Count(copied, v) {
					t.Errorf("structure %q was scrubbed: %s", v, note.Str())
				}
			}
		})
	}
}

// TestTypedToolOutputKeepsItsType: the Vercel AI SDK's prompt messages wrap a tool result
// in a typed output ({"type":"json","value":…}); the value is marked with the result's
// hash, the type stays, and a wrapper of another shape is marked whole.
func TestTypedToolOutputKeepsItsType(t *testing.T) {
	for _, tc := range []struct{ name, output, want string }{
		{"json", `{"type":"json","value":` + toolResult + `}`, `{"type":"json","value":"` + Marker(hashOf(toolResult)) + `"}`},
		{"value first", `{"value":` + toolResult + `,"type":"error-json"}`, `{"value":"` + Marker(hashOf(toolResult)) + `","type":"error-json"}`},
		{"not a typed output", `{"type":"json","value":` + toolResult + `,"extra":1}`, `"` + Marker(hashOf(`{"type":"json","value":`+toolResult+`,"extra":1}`)) + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `[{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"charge_card","output":` + tc.output + `}]}]`
			model := ptrace.NewSpan()
			model.Attributes().PutStr("ai.prompt.messages", doc)
			redactTrace(t, testConfig(), toolSpan(), model)
			v, _ := model.Attributes().Get("ai.prompt.messages")
			want := `[{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"charge_card","output":` + tc.want + `}]}]`
			if v.Str() != want {
				t.Errorf("got  %s\nwant %s", v.Str(), want)
			}
		})
	}
}

// TestToolMessageArtifactIsMarked: a LangChain tool's artifact (the raw output it returns
// beside its content) is a payload in every message copy, wherever it sits in the message.
func TestToolMessageArtifactIsMarked(t *testing.T) {
	artifact := `{"iban":"` + iban + `"}`
	for _, doc := range []string{
		`{"messages":[{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"content":"found 1 account","artifact":` + artifact + `,"tool_call_id":"call_1","name":"lookup_customer"}}]}`,
		`{"messages":[{"role":"tool","tool_call_id":"call_1","artifact":` + artifact + `,"content":"found 1 account"}]}`,
	} {
		model := ptrace.NewSpan()
		model.Attributes().PutStr("input.value", doc)
		redactTrace(t, testConfig(), toolSpan(), model)
		v, _ := model.Attributes().Get("input.value")
		if !strings.Contains(v.Str(), `"artifact":"`+Marker(hashOf(artifact))+`"`) {
			t.Errorf("artifact not marked: %s", v.Str())
		}
	}
}
