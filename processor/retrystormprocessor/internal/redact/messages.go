package redact

import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"

// A message structure is what SDKs write when they record a conversation, as JSON in a
// string attribute, as an attribute map, or as the attributes of a span event. The rules
// below, over the vocabulary of package messages, find the two places a tool payload
// sits: a tool call's arguments and a tool response's content.

// typedOutputValue returns where the value of a typed tool output sits in raw, a JSON
// object that is one: exactly the members "type" (one of messages.TypedOutputTypes) and "value".
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
			typed = ok && messages.TypedOutputTypes[t]
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
func (w *rewriter) replacement(p messages.Part, ctx context, key string, isString bool) (marker bool, text bool) {
	if p == messages.ToolMessage && (key == "content" && isString || key == "artifact") {
		// A tool message's artifact is the raw output a LangChain tool returns beside its
		// content (response_format "content_and_artifact").
		return true, false
	}
	switch r := messages.RoleOf(key); {
	case p == messages.Call && r&messages.ArgKey != 0, p == messages.Result && r&messages.ResultKey != 0, ctx == ctxToolText && r&messages.TextKey != 0:
		return true, false
	case !w.keepText && r&messages.TextKey != 0:
		return false, true
	}
	return false, false
}

// childContext is the context of the values inside member key of an object classified p.
func childContext(p messages.Part, ctx context, key string) context {
	if p == messages.ToolMessage && key == "content" || p == messages.ToolMessage && key == "parts" {
		return ctxToolText
	}
	if p == messages.Call || p == messages.Result {
		return ctxNone
	}
	return ctx
}

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}
