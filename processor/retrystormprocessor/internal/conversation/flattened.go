package conversation

import (
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
	key                         flatKey
	role, callID, name, content string
	hasContent                  bool
	calls                       []flatCall
}

type flatCall struct {
	n        int // the call's number in its message's list
	id, name string
	args     string
	hasArgs  bool
}

// flatMessages is a span's flattened messages, gathered into space a Reader reuses from
// span to span: one span's are read before the next span's are gathered.
type flatMessages struct {
	msgs []flatMessage
	last int // the message the previous field belonged to: fields come grouped
}

// message returns the message of key k, added when new.
func (fm *flatMessages) message(k flatKey) *flatMessage {
	if fm.last < len(fm.msgs) && fm.msgs[fm.last].key == k {
		return &fm.msgs[fm.last]
	}
	for i := range fm.msgs {
		if fm.msgs[i].key == k {
			fm.last = i
			return &fm.msgs[i]
		}
	}
	if len(fm.msgs) < cap(fm.msgs) {
		fm.msgs = fm.msgs[:len(fm.msgs)+1]
		m := &fm.msgs[len(fm.msgs)-1]
		*m = flatMessage{key: k, calls: m.calls[:0]}
	} else {
		fm.msgs = append(fm.msgs, flatMessage{key: k})
	}
	fm.last = len(fm.msgs) - 1
	return &fm.msgs[fm.last]
}

// call returns m's call numbered n, added when new.
func (m *flatMessage) call(n int) *flatCall {
	for i := len(m.calls) - 1; i >= 0; i-- {
		if m.calls[i].n == n {
			return &m.calls[i]
		}
	}
	m.calls = append(m.calls, flatCall{n: n})
	return &m.calls[len(m.calls)-1]
}

// readFlattened reads the flattened messages of attrs: requests from outputs, responses
// (in full mode) from every message. It reports whether a flattened message names a tool
// call, and whether one is input.
func (rd *Reader) readFlattened(attrs pcommon.Map, full bool, f *found) (holds, hasInput bool) {
	msgs := rd.gatherFlattened(attrs, full)
	for i := range msgs {
		m := &msgs[i]
		input := isInputKey(m.key.prefix)
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
	msgs := rd.gatherFlattened(attrs, full)
	for i := range msgs {
		if isInputKey(msgs[i].key.prefix) == inputs {
			emitFlatCalls(&msgs[i], full, f)
		}
	}
}

type flatKey struct {
	prefix string
	msg    int
}

// gatherFlattened gathers attrs' flattened messages, ordered as they were listed (by
// list, then number), into the Reader's space: valid until its next call.
func (rd *Reader) gatherFlattened(attrs pcommon.Map, full bool) []flatMessage {
	fm := &rd.flat
	fm.msgs, fm.last = fm.msgs[:0], 0
	for k, v := range attrs.All() {
		// A skim reads requests, from outputs only: the inputs' fields are not gathered.
		if !IsFlattened(k) || !full && (!strings.Contains(k, "ool") || isInputKey(k)) {
			continue
		}
		ff, ok := splitFlattened(k)
		if !ok {
			continue
		}
		m := fm.message(flatKey{ff.prefix, ff.msg})
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
		c := m.call(ff.call)
		switch {
		case ff.field == "id":
			c.id = s
		case ff.field == "name":
			c.name = strings.TrimSpace(s)
		case messages.RoleOf(ff.field)&messages.ArgKey != 0:
			c.args, c.hasArgs = s, true
		}
	}
	slices.SortFunc(fm.msgs, func(a, b flatMessage) int {
		if c := strings.Compare(a.key.prefix, b.key.prefix); c != 0 {
			return c
		}
		return a.key.msg - b.key.msg
	})
	return fm.msgs
}

// emitFlatCalls adds m's tool calls to f's requests, in their order.
func emitFlatCalls(m *flatMessage, full bool, f *found) {
	slices.SortFunc(m.calls, func(a, b flatCall) int { return a.n - b.n })
	for i := range m.calls {
		c := &m.calls[i]
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
