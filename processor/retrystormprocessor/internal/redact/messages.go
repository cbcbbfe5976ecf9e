package redact

import (
	"strings"

	"github.com/tidwall/gjson"
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
	callTypes = set("tool_call", "tool-call", "tool_use", "tool-use", "tooluse", "function_call", "functioncall",
		"server_tool_use", "tool-input-available", "dynamic-tool")
	resultTypes = set("tool_call_response", "tool-result", "tool_result", "toolresult", "tool-error",
		"function_call_output", "function_response", "functionresponse", "tool-output-available", "mcp_tool_result")
	// callWrappers and resultWrappers are members that hold one call or response object.
	callWrappers   = set("toolUse", "tool_use", "functionCall", "function_call", "function", "lg_tool_call")
	resultWrappers = set("toolResult", "tool_result", "functionResponse", "function_response")
	// callLists and resultLists are members whose elements are calls or responses.
	callLists   = set("tool_calls", "toolCalls", "invalid_tool_calls")
	resultLists = set("toolResults", "tool_results")
	toolRoles   = set("tool", "function", "ipython", "tool_result")
	// argMembers hold a call's arguments; resultMembers a response's content.
	argMembers    = set("arguments", "args", "input", "toolInput")
	resultMembers = set("response", "result", "output", "content", "error", "results")
	// callIDMembers name the call a message answers.
	callIDMembers = set("tool_call_id", "toolCallId", "tool_use_id", "toolUseId")
	// textMembers hold text a user, system or model wrote.
	textMembers = set("text", "content")
)

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// fields reads the members classify needs of one object, whatever its encoding.
type fields interface {
	str(key string) (string, bool)
	has(key string) bool
}

// classify says what an object is, from its own members and the member of its parent it
// sits in (inList: it is an element of that member's array).
func classify(f fields, parentKey string, inList bool) part {
	if t, ok := f.str("type"); ok {
		t = strings.ToLower(strings.TrimSpace(t))
		switch {
		case callTypes[t]:
			return partCall
		case resultTypes[t]:
			return partResult
		}
	}
	switch {
	case inList && callLists[parentKey], !inList && callWrappers[parentKey]:
		return partCall
	case inList && resultLists[parentKey], !inList && resultWrappers[parentKey]:
		return partResult
	}
	if r, ok := f.str("role"); ok && toolRoles[strings.ToLower(strings.TrimSpace(r))] {
		return partToolMessage
	}
	for k := range callIDMembers {
		if !f.has(k) {
			continue
		}
		// An object naming the call it belongs to: a call when it carries arguments
		// (Mastra's {toolCallId, toolName, toolInput}), else a tool message when it has
		// content (LangChain's ToolMessage).
		for a := range argMembers {
			if f.has(a) {
				return partCall
			}
		}
		if f.has("content") {
			return partToolMessage
		}
	}
	return partOther
}

// context is what the enclosing objects say about the values below them.
type context uint8

const (
	ctxNone context = iota
	// ctxToolText: text below is what a tool returned (the content of a tool message).
	ctxToolText
)

// jsonFields holds the members of a JSON object classify reads, gathered in one pass.
type jsonFields struct {
	typ, role         string
	hasType, hasRole  bool
	callID, arg, cont bool
}

func fieldsOf(ms []member) *jsonFields {
	f := &jsonFields{}
	for _, m := range ms {
		v := m.v
		switch key := m.key; {
		case key == "type":
			f.typ, f.hasType = v.Str, v.Type == gjson.String
		case key == "role":
			f.role, f.hasRole = v.Str, v.Type == gjson.String
		case key == "content":
			f.cont = true
		case callIDMembers[key]:
			f.callID = true
		case argMembers[key]:
			f.arg = true
		}
	}
	return f
}

func (j *jsonFields) str(key string) (string, bool) {
	switch key {
	case "type":
		return j.typ, j.hasType
	case "role":
		return j.role, j.hasRole
	}
	return "", false
}

func (j *jsonFields) has(key string) bool {
	switch {
	case key == "content":
		return j.cont
	case callIDMembers[key]:
		return j.callID
	case argMembers[key]:
		return j.arg
	}
	return false
}

// mapFields reads members of an attribute map.
type mapFields struct{ m pcommon.Map }

func (p mapFields) str(key string) (string, bool) {
	v, ok := p.m.Get(key)
	if !ok || v.Type() != pcommon.ValueTypeStr {
		return "", false
	}
	return v.Str(), true
}

func (p mapFields) has(key string) bool {
	_, ok := p.m.Get(key)
	return ok
}

// replacement says what becomes of a member of an object classified as p: replaced by a
// marker carrying its hash (a tool payload), or by Scrubbed (text, when text is not kept).
// isString says whether the member's value is a string.
func (w *rewriter) replacement(p part, ctx context, key string, isString bool) (marker bool, text bool) {
	switch {
	case p == partToolMessage && key == "content" && isString:
		return true, false
	case p == partCall && argMembers[key]:
		return true, false
	case p == partResult && resultMembers[key]:
		return true, false
	case ctx == ctxToolText && textMembers[key]:
		return true, false
	case !w.keepText && textMembers[key]:
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
