package conversation

import (
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
)

// Messages flattened into one attribute per field (OpenInference's
// llm.output_messages.N.message.tool_calls.M.tool_call.function.name, OpenLLMetry's
// gen_ai.completion.N.tool_calls.M.arguments and gen_ai.prompt.N.tool_call_id) are read by
// their keys: a key with a numeric segment is a field of the list element it numbers.

// IsFlattened reports a key with a numeric segment: a field of a flattened list.
func IsFlattened(k string) bool {
	for i := 0; i+2 < len(k); i++ {
		if k[i] == '.' && k[i+1] >= '0' && k[i+1] <= '9' {
			j := i + 1
			for j < len(k) && k[j] >= '0' && k[j] <= '9' {
				j++
			}
			if j == len(k) || k[j] == '.' {
				return true
			}
		}
	}
	return false
}

// flatField is one flattened key, split: the list prefix, the message's number, the tool
// call's number under it (-1 for a field of the message itself) and the field's name.
type flatField struct {
	prefix string
	msg    int
	call   int
	field  string
}

// splitFlattened splits k at its first numeric segment and, after it, a tool_calls list's
// number; ok is false for a key of no message. It reads the key in place: this runs for
// every attribute of a span that holds flattened messages.
func splitFlattened(k string) (flatField, bool) {
	f := flatField{msg: -1, call: -1}
	prev := ""
	for i := 0; i <= len(k); {
		j := strings.IndexByte(k[i:], '.')
		if j < 0 {
			j = len(k) - i
		}
		seg := k[i : i+j]
		if n, ok := segmentNumber(seg); ok {
			switch {
			case f.msg < 0:
				if i == 0 {
					return f, false
				}
				f.prefix, f.msg = k[:i-1], n
			case f.call < 0 && (prev == "tool_calls" || prev == "toolCalls"):
				f.call = n
			}
		}
		prev = seg
		if i+j >= len(k) {
			f.field = seg
			break
		}
		i += j + 1
	}
	if f.msg < 0 || f.prefix == "" {
		return f, false
	}
	return f, true
}

// segmentNumber reads a key segment made of digits alone.
func segmentNumber(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// flatMessage gathers the fields of one flattened message and of its tool calls.
type flatMessage struct {
	role, callID, name, content string
	hasContent                  bool
	calls                       map[int]*flatCall
}

type flatCall struct {
	id, name string
	args     string
	hasArgs  bool
}

// readFlattened reads the flattened messages of attrs: requests from outputs, responses
// (in full mode) from every message. It reports whether a flattened message names a tool
// call, and whether one is input.
func (rd *Reader) readFlattened(attrs pcommon.Map, full bool, f *found) (holds, hasInput bool) {
	msgs := gatherFlattened(attrs, full)
	for _, key := range sortedKeys(msgs) {
		m := msgs[key]
		input := isInputKey(key.prefix)
		if len(m.calls) > 0 || messages.IsToolRole(strings.ToLower(m.role)) {
			holds = true
			hasInput = hasInput || input
		}
		if !input {
			emitFlatCalls(m, full, f)
		}
		if full && messages.IsToolRole(strings.ToLower(m.role)) && m.callID != "" {
			content := m.content
			f.responses = append(f.responses, Response{CallID: cleanID(m.callID), Tool: m.name, Content: content,
				HasContent: m.hasContent, Failed: responseFailed(parseJSON(content))})
		}
	}
	return holds, hasInput
}

// readFlattenedRequests reads the requests of attrs' flattened messages, of inputs only
// when inputs is set.
func (rd *Reader) readFlattenedRequests(attrs pcommon.Map, inputs, full bool, f *found) {
	msgs := gatherFlattened(attrs, full)
	for _, key := range sortedKeys(msgs) {
		if isInputKey(key.prefix) == inputs {
			emitFlatCalls(msgs[key], full, f)
		}
	}
}

type flatKey struct {
	prefix string
	msg    int
}

// sortedKeys orders a span's flattened messages as they were listed.
func sortedKeys(msgs map[flatKey]*flatMessage) []flatKey {
	keys := slices.Collect(maps.Keys(msgs))
	slices.SortFunc(keys, func(a, b flatKey) int {
		if c := strings.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return a.msg - b.msg
	})
	return keys
}

func gatherFlattened(attrs pcommon.Map, full bool) map[flatKey]*flatMessage {
	var msgs map[flatKey]*flatMessage
	for k, v := range attrs.All() {
		// A skim reads requests, from outputs only: the inputs' fields are not gathered.
		if !IsFlattened(k) || !full && (!strings.Contains(k, "ool") || isInputKey(k)) {
			continue
		}
		ff, ok := splitFlattened(k)
		if !ok {
			continue
		}
		if msgs == nil {
			msgs = map[flatKey]*flatMessage{}
		}
		mk := flatKey{ff.prefix, ff.msg}
		m := msgs[mk]
		if m == nil {
			m = &flatMessage{}
			msgs[mk] = m
		}
		s := v.AsString()
		if ff.call < 0 {
			switch {
			case ff.field == "role":
				m.role = strings.TrimSpace(s)
			case messages.RoleOf(ff.field)&messages.CallIDKey != 0:
				m.callID = s
			case ff.field == "name":
				m.name = s
			case ff.field == "content":
				m.content, m.hasContent = s, true
			}
			continue
		}
		if m.calls == nil {
			m.calls = map[int]*flatCall{}
		}
		c := m.calls[ff.call]
		if c == nil {
			c = &flatCall{}
			m.calls[ff.call] = c
		}
		switch {
		case ff.field == "id":
			c.id = s
		case ff.field == "name":
			c.name = strings.TrimSpace(s)
		case messages.RoleOf(ff.field)&messages.ArgKey != 0:
			c.args, c.hasArgs = s, true
		}
	}
	return msgs
}

// emitFlatCalls adds m's tool calls to f's requests, in their order.
func emitFlatCalls(m *flatMessage, full bool, f *found) {
	for _, i := range slices.Sorted(maps.Keys(m.calls)) {
		c := m.calls[i]
		if c.name == "" {
			continue
		}
		r := Request{CallID: cleanID(c.id), Tool: c.name, HasArgs: c.hasArgs, argsRaw: c.args}
		if full {
			r.Args = c.args
		}
		f.requests = append(f.requests, r)
	}
}
