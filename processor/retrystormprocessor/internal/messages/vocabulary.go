// Package messages is the vocabulary of message structures: what SDKs write when they
// record a conversation (a list of messages with roles, each with text and tool-call
// parts), in any of the formats in use (OTel GenAI parts, OpenAI chat and Responses,
// Anthropic and Bedrock content blocks, Gemini parts, Vercel AI SDK, LangChain, Mastra,
// Genkit's toolRequest and toolResponse parts).
// Redaction reads it to find where a tool payload sits; following the model reads it to
// find what the model asked for and what it was answered.
package messages // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Part is what an object of a message structure is.
type Part uint8

const (
	// Other is anything but the parts below.
	Other Part = iota
	// Call is a tool call: its argument members hold the tool's arguments.
	Call
	// Result is a tool response part: its result members hold what the tool returned.
	Result
	// ToolMessage is a message from the tool role: its content is what the tool returned,
	// unless it is made of parts that say what they are.
	ToolMessage
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

// IsToolRole reports whether role (lowercased, trimmed) is the tool role.
func IsToolRole(role string) bool { return toolRoles[role] }

// KeyRole says what a member's key makes of its value, a bit a meaning.
type KeyRole uint16

const (
	// ArgKey: a call's arguments.
	ArgKey KeyRole = 1 << iota
	// ResultKey: a response's content.
	ResultKey
	// TextKey: text a user, system or model wrote.
	TextKey
	// CallIDKey names the call a message answers.
	CallIDKey
	// CallListKey and ResultListKey: the elements are calls or responses.
	CallListKey
	ResultListKey
	// CallWrapperKey and ResultWrapperKey hold one call or response object.
	CallWrapperKey
	ResultWrapperKey
)

// RoleOf is what key makes of its value (a switch: this runs for every member read).
func RoleOf(key string) KeyRole {
	switch key {
	case "arguments", "args", "input", "toolInput":
		return ArgKey
	case "content":
		return ResultKey | TextKey
	case "response", "result", "output", "error", "results", "artifact":
		return ResultKey
	case "text":
		return TextKey
	case "tool_call_id", "toolCallId", "tool_use_id", "toolUseId":
		return CallIDKey
	case "tool_calls", "toolCalls", "invalid_tool_calls", "tool_call_chunks":
		return CallListKey
	case "toolResults", "tool_results":
		return ResultListKey
	case "toolUse", "tool_use", "functionCall", "function_call", "function", "lg_tool_call", "toolRequest":
		return CallWrapperKey
	case "toolResult", "tool_result", "functionResponse", "function_response", "toolResponse":
		return ResultWrapperKey
	}
	return 0
}

// Facts are what Classify reads of an object's members, whatever its encoding.
type Facts struct {
	// Typed is what the member "type" says: Call, Result or Other.
	Typed Part
	// ToolRole: the member "role" names the tool role.
	ToolRole bool
	// CallID, Args, Content: the object has such a member.
	CallID, Args, Content bool
}

// Note records that the object has member key.
func (f *Facts) Note(key string) {
	switch r := RoleOf(key); {
	case key == "content":
		f.Content = true
	case r&CallIDKey != 0:
		f.CallID = true
	case r&ArgKey != 0:
		f.Args = true
	}
}

// NoteString records the string value of member key ("type" and "role" say what the
// object is).
func (f *Facts) NoteString(key, v string) {
	switch key {
	case "type":
		t := strings.ToLower(strings.TrimSpace(v))
		switch {
		case callTypes[t]:
			f.Typed = Call
		case resultTypes[t]:
			f.Typed = Result
		default:
			f.Typed = Other
		}
	case "role":
		f.ToolRole = toolRoles[strings.ToLower(strings.TrimSpace(v))]
	}
}

// FactsOfMap reads the facts of an attribute map.
func FactsOfMap(m pcommon.Map) *Facts {
	f := &Facts{}
	for k, v := range m.All() {
		f.Note(k)
		if v.Type() == pcommon.ValueTypeStr {
			f.NoteString(k, v.Str())
		}
	}
	return f
}

// Classify says what an object is, from its own members and the member of its parent it
// sits in (inList: it is an element of that member's array).
func Classify(f *Facts, parentKey string, inList bool) Part {
	if f.Typed != Other {
		return f.Typed
	}
	switch r := RoleOf(parentKey); {
	case inList && r&CallListKey != 0, !inList && r&CallWrapperKey != 0:
		return Call
	case inList && r&ResultListKey != 0, !inList && r&ResultWrapperKey != 0:
		return Result
	}
	switch {
	case f.ToolRole:
		return ToolMessage
	case f.CallID && f.Args:
		// An object naming the call it belongs to: a call when it carries arguments
		// (Mastra's {toolCallId, toolName, toolInput}), else a tool message when it has
		// content (LangChain's ToolMessage).
		return Call
	case f.CallID && f.Content:
		return ToolMessage
	}
	return Other
}

// TypedOutputTypes are the types of the Vercel AI SDK's typed tool output
// ({"type":"json","value":…}, LanguageModelV2ToolResultOutput), which its prompt messages
// put in a tool-result part's output: the value is what the tool returned.
var TypedOutputTypes = set("json", "text", "error-json", "error-text", "content")
