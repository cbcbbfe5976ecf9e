package conversation

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// maxDepth bounds how deep a message structure is walked, JSON inside JSON strings
// included, so hostile input cannot exhaust the stack.
const maxDepth = 24

// reading is one walk over one attribute's message structure.
type reading struct {
	// full reads arguments, responses and offers; otherwise only the requests' ids and names.
	full bool
	// requests is false where the attribute is the model's input: its requests are history.
	requests bool
	found    *found
}

// found is what the walks of one span found.
type found struct {
	requests  []Request
	responses []Response
	offers    []string
}

// walk reads v, the value of member parentKey (an element of its array when inList).
func (r *reading) walk(v gjson.Result, parentKey string, inList bool, depth int) {
	if depth > maxDepth {
		return
	}
	switch {
	case v.IsArray():
		v.ForEach(func(_, el gjson.Result) bool {
			r.walk(el, parentKey, true, depth+1)
			return true
		})
	case v.IsObject():
		r.object(v, parentKey, inList, depth)
	case v.Type == gjson.String:
		// JSON held in a JSON string: LangChain's serialised messages, Vercel's inputs.
		if s := v.Str; looksLikeMessages(s) {
			r.walk(gjson.Parse(s), parentKey, inList, depth+1)
		}
	}
}

// object reads one object: a tool call, a tool response, a tool definition, or a
// container of them.
func (r *reading) object(v gjson.Result, parentKey string, inList bool, depth int) {
	var f messages.Facts
	var o objectMembers
	v.ForEach(func(k, m gjson.Result) bool {
		key := k.Str
		f.Note(key)
		if m.Type == gjson.String && (key == "type" || key == "role") {
			f.NoteString(key, m.Str)
		}
		o.note(key, m)
		return true
	})
	part := messages.Classify(&f, parentKey, inList)
	consumed := ""
	switch part {
	case messages.Call:
		consumed = r.call(&o, parentKey)
		// OpenAI lists an offered tool as {"type":"function","function":{name, parameters}}:
		// under a call's wrapping member, a definition.
		if r.full && o.name != "" && o.schema && !o.hasArgs {
			r.found.offers = append(r.found.offers, o.name)
		}
	case messages.Result, messages.ToolMessage:
		// What a tool returned is payload, not conversation: a sub-agent's messages
		// inside it are not this model's requests. A tool message that names no call is
		// made of parts that do (Vercel's tool-result parts): those are read.
		if o.responseID != "" || o.name != "" || part == messages.Result {
			if r.full {
				r.response(&o)
			}
			return
		}
	default:
		if r.full && o.name != "" && o.schema {
			r.found.offers = append(r.found.offers, o.name)
		}
	}
	v.ForEach(func(k, m gjson.Result) bool {
		key := k.Str
		if key == consumed || part == messages.Call && messages.RoleOf(key)&messages.ArgKey != 0 {
			return true
		}
		if m.IsObject() || m.IsArray() || m.Type == gjson.String && len(m.Str) > 1 {
			r.walk(m, key, false, depth+1)
		}
		return true
	})
}

// call records the tool call o, merged with the call object it wraps (OpenAI's
// {id, function: {name, arguments}}), and returns the wrapping member read with it.
func (r *reading) call(o *objectMembers, parentKey string) (consumed string) {
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
	if name == "" || !hasArgs && id == "" && (!wrapperOnly || o.schema) {
		return consumed
	}
	if !r.requests {
		return consumed
	}
	req := Request{CallID: cleanID(id), Tool: name, HasArgs: hasArgs, argsRaw: args.Raw}
	if r.full && hasArgs {
		req.Args = raw(args)
	}
	r.found.requests = append(r.found.requests, req)
	return consumed
}

// response records the tool response o.
func (r *reading) response(o *objectMembers) {
	id, name := o.responseID, o.name
	content, has := o.content, o.hasContent
	failed := o.failed
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
		failed = failed || w.failed
	}
	if id == "" && name == "" {
		return
	}
	if has {
		content = typedOutputValue(content)
	}
	r.found.responses = append(r.found.responses, Response{CallID: cleanID(id), Tool: name, Content: content, HasContent: has, Failed: failed})
}

// objectMembers are the members of one object that say what a call or response is.
type objectMembers struct {
	callID, responseID, name string
	// args is the arguments' value; content is raw JSON (a JSON string's text).
	args                gjson.Result
	content             string
	hasArgs, hasContent bool
	// schema: a member describing parameters, as a tool definition has.
	schema bool
	failed bool
	// wrapped is the call or response object under a wrapping member (function,
	// functionCall, functionResponse, toolUse, toolResult), read with it.
	wrapped    *objectMembers
	wrappedKey string
}

func (o *objectMembers) note(key string, m gjson.Result) {
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
		if o.callID == "" && m.Type == gjson.String {
			o.callID = m.Str
		}
		if o.responseID == "" && m.Type == gjson.String {
			o.responseID = m.Str
		}
		return
	case "name", "toolName", "tool_name":
		if m.Type == gjson.String && o.name == "" {
			o.name = strings.TrimSpace(m.Str)
		}
		return
	case "parameters", "input_schema", "inputSchema", "parametersJsonSchema", "json_schema", "schema":
		o.schema = true
		return
	case "isError", "is_error":
		o.failed = o.failed || m.Type == gjson.True || m.Type == gjson.String && strings.EqualFold(m.Str, "true")
		return
	case "status":
		o.failed = o.failed || m.Type == gjson.String && isFailureWord(m.Str)
		return
	case "type":
		if m.Type == gjson.String && strings.EqualFold(m.Str, "tool-error") {
			o.failed = true
		}
		return
	}
	switch r := messages.RoleOf(key); {
	case r&messages.ArgKey != 0 && !o.hasArgs:
		o.args, o.hasArgs = m, true
	case r&messages.ResultKey != 0 && !o.hasContent:
		o.content, o.hasContent = raw(m), true
		o.failed = o.failed || key == "error" && m.Type != gjson.Null || responseFailed(m)
	case r&(messages.CallWrapperKey|messages.ResultWrapperKey) != 0 && m.IsObject() && o.wrapped == nil:
		w := &objectMembers{}
		m.ForEach(func(k, v gjson.Result) bool {
			w.note(k.Str, v)
			return true
		})
		o.wrapped, o.wrappedKey = w, key
	}
}

// responseFailed reports a response value that says the tool failed: an MCP result with
// isError, the Vercel AI SDK's typed error output ({"type":"error-text",…}), or a Gemini
// function response {"error": …} (the Gemini API's convention for a function's failure).
func responseFailed(m gjson.Result) bool {
	if m.Type == gjson.String && looksLikeMessages(m.Str) {
		m = gjson.Parse(m.Str)
	}
	if !m.IsObject() {
		return false
	}
	failed := false
	members := 0
	hasError := false
	m.ForEach(func(k, v gjson.Result) bool {
		members++
		switch k.Str {
		case "isError", "is_error":
			failed = failed || v.Type == gjson.True
		case "type":
			failed = failed || v.Type == gjson.String && strings.HasPrefix(v.Str, "error-")
		case "error":
			hasError = v.Type != gjson.Null && v.Type != gjson.False
		case "result", "response", "output":
			failed = failed || v.IsObject() && v.Get("isError").Type == gjson.True
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
	doc := gjson.Parse(content)
	t, v := doc.Get("type"), doc.Get("value")
	if t.Type != gjson.String || !messages.TypedOutputTypes[t.Str] || !v.Exists() {
		return content
	}
	n := 0
	doc.ForEach(func(_, _ gjson.Result) bool { n++; return n <= 2 })
	if n != 2 {
		return content
	}
	return raw(v)
}

func isFailureWord(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "error", "failed", "failure":
		return true
	}
	return false
}

// raw is a member's value as JSON text, a string's own text.
func raw(m gjson.Result) string {
	if m.Type == gjson.String {
		return m.Str
	}
	return m.Raw
}

func str(m gjson.Result) string {
	if m.Type == gjson.String {
		return m.Str
	}
	if m.Type == gjson.Number {
		return m.Raw
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

// looksLikeMessages is the cheap first look at a string: a JSON object or array that
// names a tool or a function somewhere (every vocabulary's calls and responses do).
func looksLikeMessages(s string) bool {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	if i >= len(s) || s[i] != '{' && s[i] != '[' || len(s)-i < 8 {
		return false
	}
	return holdsToolWord(s[i:])
}

func holdsToolWord(s string) bool {
	return strings.Contains(s, "ool") || strings.Contains(s, "unction") || strings.Contains(s, "OOL") || strings.Contains(s, "UNCTION")
}
