package redact

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// A message structure is what SDKs write when they record a conversation: a list of
// messages with roles, each with text and tool-call parts, as JSON in a string attribute,
// as an attribute map, or as the attributes of a span event. The rules below find, in any
// of the formats in use (OTel GenAI parts, OpenAI chat, Anthropic and Bedrock content
// blocks, Vercel AI SDK, LangChain, Mastra), the two places a tool payload sits: a tool
// call's arguments and a tool response's content.

// part is what an object of a message structure is.
type part uint8

const (
	partOther part = iota
	// partCall is a tool call: its argument members hold the tool's arguments.
	partCall
	// partResult is a tool response part: its result members hold what the tool returned.
	partResult
	// partToolMessage is a message from the tool role: its content is what the tool
	// returned, unless it is made of parts that say what they are.
	partToolMessage
)

var (
	// callTypes and resultTypes are values of a part's type, lowercased.
	callTypes = set("tool_call", "tool-call", "tool_call_chunk", "tool_use", "tool-use", "tooluse", "function_call", "functioncall",
		"server_tool_use", "tool-input-available", "dynamic-tool")
	resultTypes = set("tool_call_response", "tool-result", "tool_result", "toolresult", "tool-error",
		"function_call_output", "function_response", "functionresponse", "tool-output-available", "mcp_tool_result")
	toolRoles = set("tool", "function", "ipython", "tool_result")
)

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// keyRole says what a member's key makes of its value, a bit a meaning.
type keyRole uint16

const (
	// argKey: a call's arguments.
	argKey keyRole = 1 << iota
	// resultKey: a response's content.
	resultKey
	// textKey: text a user, system or model wrote.
	textKey
	// callIDKey names the call a message answers.
	callIDKey
	// callListKey and resultListKey: the elements are calls or responses.
	callListKey
	resultListKey
	// callWrapperKey and resultWrapperKey hold one call or response object.
	callWrapperKey
	resultWrapperKey
)

// roleOf is what key makes of its value (a switch: this runs for every member read).
func roleOf(key string) keyRole {
	switch key {
	case "arguments", "args", "input", "toolInput":
		return argKey
	case "content":
		return resultKey | textKey
	case "response", "result", "output", "error", "results", "artifact":
		return resultKey
	case "text":
		return textKey
	case "tool_call_id", "toolCallId", "tool_use_id", "toolUseId":
		return callIDKey
	case "tool_calls", "toolCalls", "invalid_tool_calls", "tool_call_chunks":
		return callListKey
	case "toolResults", "tool_results":
		return resultListKey
	case "toolUse", "tool_use", "functionCall", "function_call", "function", "lg_tool_call":
		return callWrapperKey
	case "toolResult", "tool_result", "functionResponse", "function_response":
		return resultWrapperKey
	}
	return 0
}

// facts are what classify reads of an object's members, whatever its encoding.
type facts struct {
	// typed is what the member "type" says: partCall, partResult or partOther.
	typed part
	// toolRole: the member "role" names the tool role.
	toolRole bool
	// callID, args, content: the object has such a member.
	callID, args, content bool
}

// note records that the object has member key.
func (f *facts) note(key string) {
	switch r := roleOf(key); {
	case key == "content":
		f.content = true
	case r&callIDKey != 0:
		f.callID = true
	case r&argKey != 0:
		f.args = true
	}
}

// noteString records the string value of member key ("type" and "role" say what the
// object is).
func (f *facts) noteString(key, v string) {
	switch key {
	case "type":
		t := strings.ToLower(strings.TrimSpace(v))
		switch {
		case callTypes[t]:
			f.typed = partCall
		case resultTypes[t]:
			f.typed = partResult
		default:
			f.typed = partOther
		}
	case "role":
		f.toolRole = toolRoles[strings.ToLower(strings.TrimSpace(v))]
	}
}

// factsOfMap reads the facts of an attribute map.
func factsOfMap(m pcommon.Map) *facts {
	f := &facts{}
	for k, v := range m.All() {
		f.note(k)
		if v.Type() == pcommon.ValueTypeStr {
			f.noteString(k, v.Str())
		}
	}
	return f
}

// classify says what an object is, from its own members and the member of its parent it
// sits in (inList: it is an element of that member's array).
func classify(f *facts, parentKey string, inList bool) part {
	if f.typed != partOther {
		return f.typed
	}
	switch r := roleOf(parentKey); {
	case inList && r&callListKey != 0, !inList && r&callWrapperKey != 0:
		return partCall
	case inList && r&resultListKey != 0, !inList && r&resultWrapperKey != 0:
		return partResult
	}
	switch {
	case f.toolRole:
		return partToolMessage
	case f.callID && f.args:
		// An object naming the call it belongs to: a call when it carries arguments
		// (Mastra's {toolCallId, toolName, toolInput}), else a tool message when it has
		// content (LangChain's ToolMessage).
		return partCall
	case f.callID && f.content:
		return partToolMessage
	}
	return partOther
}

// typedOutputTypes are the types of the Vercel AI SDK's typed tool output
// ({"type":"json","value":…}, LanguageModelV2ToolResultOutput), which its prompt messages
// put in a tool-result part's output: the value is what the tool returned.
var typedOutputTypes = set("json", "text", "error-json", "error-text", "content")

// typedOutputValue returns where the value of a typed tool output sits in raw, a JSON
// object that is one: exactly the members "type" (one of typedOutputTypes) and "value".
func typedOutputValue(raw string) (from, to int, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0, 0, false
	}
	typed := false
	from = -1
	for n := 0; ; n++ {
		if n == 2 {
			return 0, 0, false
		}
		keyEnd, ok := stringEnd(raw, skipSpace(raw, i+1))
		if !ok {
			return 0, 0, false
		}
		key, _ := unquote(raw[skipSpace(raw, i+1):keyEnd])
		j := skipSpace(raw, keyEnd)
		if j >= len(raw) || raw[j] != ':' {
			return 0, 0, false
		}
		start := skipSpace(raw, j+1)
		end, ok := valueEnd(raw, start)
		if !ok {
			return 0, 0, false
		}
		switch key {
		case "type":
			t, ok := unquote(raw[start:end])
			typed = ok && typedOutputTypes[t]
		case "value":
			from, to = start, end
		default:
			return 0, 0, false
		}
		if i = skipSpace(raw, end); i < len(raw) && raw[i] == '}' {
			return from, to, typed && from >= 0 && n == 1
		}
		if i >= len(raw) || raw[i] != ',' {
			return 0, 0, false
		}
	}
}

// context is what the enclosing objects say about the values below them.
type context uint8

const (
	ctxNone context = iota
	// ctxToolText: text below is what a tool returned (the content of a tool message).
	ctxToolText
)

// replacement says what becomes of a member of an object classified as p: replaced by a
// marker carrying its hash (a tool payload), or by Scrubbed (text, when text is not kept).
// isString says whether the member's value is a string.
func (w *rewriter) replacement(p part, ctx context, key string, isString bool) (marker bool, text bool) {
	if p == partToolMessage && (key == "content" && isString || key == "artifact") {
		// A tool message's artifact is the raw output a LangChain tool returns beside its
		// content (response_format "content_and_artifact").
		return true, false
	}
	switch r := roleOf(key); {
	case p == partCall && r&argKey != 0, p == partResult && r&resultKey != 0, ctx == ctxToolText && r&textKey != 0:
		return true, false
	case !w.keepText && r&textKey != 0:
		return false, true
	}
	return false, false
}

// childContext is the context of the values inside member key of an object classified p.
func childContext(p part, ctx context, key string) context {
	if p == partToolMessage && key == "content" || p == partToolMessage && key == "parts" {
		return ctxToolText
	}
	if p == partCall || p == partResult {
		return ctxNone
	}
	return ctx
}
