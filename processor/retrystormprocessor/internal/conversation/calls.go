package conversation

import (
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// call records the tool call o, merged with the call object it wraps (OpenAI's
// {id, function: {name, arguments}}), and returns the wrapping member read with it.
func (r *reading) call(o *objectMembers, parentKey string, start mark, drops []dropped) (consumed string) {
	id, name, args, hasArgs := o.callID, o.name, o.args, o.hasArgs
	if o.wrapped != nil {
		w := o.wrapped
		consumed = o.wrappedKey
		if id == "" {
			id = w.callID
		}
		if name == "" {
			name = w.name
		}
		if !hasArgs {
			args, hasArgs = w.args, w.hasArgs
		}
	}
	// A definition under a "function" member ({name, description, parameters}) is no call:
	// a call carries its arguments, an id, or sits under a member that names calls alone.
	wrapperOnly := parentKey == "functionCall" || parentKey == "toolUse" || parentKey == "tool_use" || parentKey == "function_call" || parentKey == "toolRequest"
	// The arguments are payload; the wrapped call is this one, recorded below merged.
	r.dropMembers(drops, func(key string) bool {
		return key == consumed || messages.RoleOf(key)&messages.ArgKey != 0
	})
	if name == "" || !hasArgs && id == "" && (!wrapperOnly || o.schema) {
		return consumed
	}
	if !r.requests {
		return consumed
	}
	req := Request{CallID: cleanID(id), Tool: name, HasArgs: hasArgs, argsRaw: args.raw()}
	if r.full && hasArgs {
		req.Args = textOf(args)
	}
	r.found.requests = append(r.found.requests, req)
	return consumed
}

// response records the tool response o.
func (r *reading) response(o *objectMembers) {
	id, name := o.responseID, o.name
	content, has := o.content, o.hasContent
	failed := o.failed || o.errorMember
	if o.wrapped != nil {
		w := o.wrapped
		if id == "" {
			id = w.responseID
		}
		if name == "" {
			name = w.name
		}
		if !has {
			content, has = w.content, w.hasContent
		}
		failed = failed || w.failed || w.errorMember
	}
	if id == "" && name == "" {
		return
	}
	text := ""
	if has {
		failed = failed || responseFailed(content)
		text = typedOutputValue(textOf(content))
	}
	r.found.responses = append(r.found.responses, Response{CallID: cleanID(id), Tool: name, Content: text, HasContent: has, Failed: failed})
}

// objectMembers are the members of one object that say what a call or response is.
type objectMembers struct {
	callID, responseID, name string
	// args and content are the arguments' and the content's values.
	args                value
	content             value
	hasArgs, hasContent bool
	// schema: a member describing parameters, as a tool definition has.
	schema bool
	// failed: a member says the call failed; errorMember: the content is an error member.
	failed, errorMember bool
	// wrapped is the call or response object under a wrapping member (function,
	// functionCall, functionResponse, toolUse, toolResult), read with it.
	wrapped    *objectMembers
	wrappedKey string
}

func (o *objectMembers) note(key string, m value) {
	switch key {
	case "call_id":
		// OpenAI Responses: id is the item's, call_id the call's.
		o.callID, o.responseID = str(m), str(m)
		return
	case "toolCallId", "tool_call_id", "toolUseId", "tool_use_id":
		o.callID, o.responseID = str(m), str(m)
		return
	case "id", "ref":
		// Genkit names a call by its ref.
		if m.kind == kindString {
			if o.callID == "" {
				o.callID = m.text()
			}
			if o.responseID == "" {
				o.responseID = m.text()
			}
		}
		return
	case "name", "toolName", "tool_name":
		if m.kind == kindString && o.name == "" {
			o.name = strings.TrimSpace(m.text())
		}
		return
	case "parameters", "input_schema", "inputSchema", "parametersJsonSchema", "json_schema", "schema":
		o.schema = true
		return
	case "isError", "is_error":
		o.failed = o.failed || m.kind == kindTrue || m.kind == kindString && strings.EqualFold(m.text(), "true")
		return
	case "status":
		o.failed = o.failed || m.kind == kindString && isFailureWord(m.text())
		return
	case "type":
		if m.kind == kindString && strings.EqualFold(m.text(), "tool-error") {
			o.failed = true
		}
		return
	}
	switch r := messages.RoleOf(key); {
	case r&messages.ArgKey != 0 && !o.hasArgs:
		o.args, o.hasArgs = m, true
	case r&messages.ResultKey != 0 && !o.hasContent:
		o.content, o.hasContent = m, true
		o.errorMember = key == "error" && m.kind != kindNull
	}
}

// responseFailed reports a response value that says the tool failed: an MCP result with
// isError, the Vercel AI SDK's typed error output ({"type":"error-text",…}), or a Gemini
// function response {"error": …} (the Gemini API's convention for a function's failure).
func responseFailed(m value) bool {
	if m.kind == kindString {
		if raw := m.raw(); !strings.Contains(raw, "rror") {
			return false // no isError, is_error, error member or error- type to find
		}
		s := m.text()
		m = parseJSON(s)
	}
	if m.kind != kindObject {
		return false
	}
	failed := false
	members := 0
	hasError := false
	m.each(func(k string, v value) bool {
		members++
		switch k {
		case "isError", "is_error":
			failed = failed || v.kind == kindTrue
		case "type":
			failed = failed || v.kind == kindString && strings.HasPrefix(v.text(), "error-")
		case "error":
			hasError = v.kind != kindNull && v.kind != kindFalse
		case "result", "response", "output":
			failed = failed || v.kind == kindObject && v.get("isError").kind == kindTrue
		}
		return true
	})
	return failed || hasError && members == 1
}

// typedOutputValue is the value of a typed tool output ({"type":"json","value":…}, the
// Vercel AI SDK's), else content itself.
func typedOutputValue(content string) string {
	if len(content) == 0 || content[0] != '{' {
		return content
	}
	doc := parseJSON(content)
	var t, v value
	n := 0
	doc.each(func(k string, el value) bool {
		n++
		switch k {
		case "type":
			t = el
		case "value":
			v = el
		}
		return n <= 2
	})
	if n != 2 || t.kind != kindString || !messages.TypedOutputTypes[t.text()] || !v.exists() {
		return content
	}
	return textOf(v)
}

func isFailureWord(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error", "failed", "failure":
		return true
	}
	return false
}

// textOf is a member's value as JSON text, a string's own text.
func textOf(m value) string {
	if m.kind == kindString {
		return m.text()
	}
	return m.raw()
}

func str(m value) string {
	switch m.kind {
	case kindString:
		return m.text()
	case kindNumber:
		return m.raw()
	}
	return ""
}

// cleanID is id, or "" for a placeholder that is no id: ADK Python writes "<not
// specified>" on every failed call, and SDKs write "None", "null" or "undefined".
func cleanID(id string) string {
	id = strings.TrimSpace(id)
	if toolspan.IsPlaceholderID(id) {
		return ""
	}
	return id
}
