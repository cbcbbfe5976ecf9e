package conversation

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// messageText is v as a message structure's JSON text, when it can be one that names a
// tool: a string holding a JSON object or array, or a map or slice.
func messageText(v pcommon.Value) (string, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := v.Str()
		return s, looksLikeMessages(s)
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		s := v.AsString()
		return s, holdsToolWord(s)
	}
	return "", false
}

// containerText is the JSON text of v, which jsonContainer accepted.
func containerText(v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return v.AsString()
}

// inputWords are the words of an attribute key (or event name) that say it records what
// the model was given rather than what it produced: its requests there are history.
var inputWords = [...]string{"input", "prompt", "request", "history"}

func isInputKey(k string) bool {
	for _, w := range inputWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	// The same words capitalised (llm.inputMessages, ai.Prompt): rarer, looked for only
	// where the key holds a capital letter.
	if strings.IndexFunc(k, func(r rune) bool { return r >= 'A' && r <= 'Z' }) < 0 {
		return false
	}
	for _, w := range inputWords {
		if containsFold(k, w) {
			return true
		}
	}
	return false
}

// hasDigit reports a key that may number a flattened list's element.
func hasDigit(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i]-'0' <= 9 {
			return true
		}
	}
	return false
}

// isInputEvent reports an event recording the model's input: the OTel GenAI per-message
// events (gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message, …) and any
// event whose name says input.
func isInputEvent(name string) bool {
	if strings.HasSuffix(name, ".message") && !strings.Contains(name, "choice") {
		return true
	}
	return isInputKey(name)
}

// containsFold is strings.Contains ignoring ASCII case, for a lowercase word.
func containsFold(s, word string) bool {
	n := len(word)
	for i := 0; i+n <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+n], word) {
			return true
		}
	}
	return false
}

func lastSegment(k string) string { return k[strings.LastIndexByte(k, '.')+1:] }

// payloadLooksLikeJSON reports a JSON object or array.
func payloadLooksLikeJSON(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 1 && (s[0] == '[' || s[0] == '{')
}

// toolName reports a string that can be a tool's name: no white space, not empty, short.
func toolName(s string) bool {
	return s != "" && len(s) <= 128 && !strings.ContainsAny(s, " \t\n\r{}[]\"")
}

// jsonContainer reports a value that can hold a message structure: a map, a slice holding
// one, or a string that starts (after white space) like a JSON object or array.
func jsonContainer(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		return true
	case pcommon.ValueTypeSlice:
		// A list of plain values (finish reasons, ids) holds no message: only a list with
		// a container in it is read (and marshalled to be).
		for _, e := range v.Slice().All() {
			if jsonContainer(e) {
				return true
			}
		}
		return false
	case pcommon.ValueTypeStr:
		s := v.Str()
		i := 0
		for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
			i++
		}
		return i < len(s) && (s[i] == '{' || s[i] == '[')
	}
	return false
}
