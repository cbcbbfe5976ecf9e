package conversation

import (
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
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
	scratch  *scratch
}

// scratch is the readings' working space, kept by the Reader between them.
type scratch struct {
	// drops and wrapped are, by depth, an object's dropped extents and a wrapped object.
	drops   [][]dropped
	wrapped []objectMembers
}

// found is what the walks of one span found.
type found struct {
	requests  []Request
	responses []Response
	offers    []string
	// parts counts the tool calls, responses and definitions the walks met, recorded or
	// not (a skim records no response, an input's requests are history): the span holds a
	// message structure that names a tool.
	parts int
}

// walk reads v, the value of member parentKey (an element of its array when inList).
func (r *reading) walk(v value, parentKey string, inList bool, depth int) {
	if v.kind != kindNone {
		r.walkAt(v.s, v.start, parentKey, inList, depth)
	}
}

// walkAt reads the value at s[i] and returns where it ends: one pass over the document,
// each container read as it is met, so no byte is scanned twice.
func (r *reading) walkAt(s string, i int, parentKey string, inList bool, depth int) (end int, ok bool) {
	if i >= len(s) {
		return 0, false
	}
	if depth > maxDepth {
		end, _, _, ok = scanValue(s, i)
		return end, ok
	}
	switch s[i] {
	case '{':
		end, _, ok = r.object(s, i, parentKey, inList, depth)
		return end, ok
	case '[':
		j := skipWS(s, i+1)
		if j < len(s) && s[j] == ']' {
			return j + 1, true
		}
		for j < len(s) {
			if j, ok = r.walkAt(s, j, parentKey, true, depth+1); !ok {
				return 0, false
			}
			if j = skipWS(s, j); j >= len(s) {
				return 0, false
			}
			switch s[j] {
			case ']':
				return j + 1, true
			case ',':
				j = skipWS(s, j+1)
				continue
			}
			return 0, false
		}
		return 0, false
	case '"':
		end, esc, ok := scanString(s, i)
		if !ok {
			return 0, false
		}
		// JSON held in a JSON string: LangChain's serialised messages, Vercel's inputs. Only
		// a string that opens like a JSON container is looked at further (a message's text
		// is not scanned), and the escaped text names a tool as the decoded one does:
		// decode only those.
		if raw := s[i:end]; len(raw) > 9 && opensContainer(raw) && holdsToolWord(raw) {
			if text := (value{s: s, start: i, end: end, kind: kindString, esc: esc}).text(); looksLikeMessages(text) {
				r.walkAt(text, skipWS(text, 0), parentKey, inList, depth+1)
			}
		}
		return end, true
	}
	end, _, _, ok = scanValue(s, i)
	return end, ok
}

// found marks where a member's reading left r.found, to drop what a payload member held.
type mark struct{ requests, responses, offers int }

func (r *reading) mark() mark {
	return mark{len(r.found.requests), len(r.found.responses), len(r.found.offers)}
}

// object reads one object at s[i]: a tool call, a tool response, a tool definition, or a
// container of them, its members read in one pass. What a member holds is read as it
// is met; once the object's members say what it is, what its payload members held (a
// call's arguments, a response's content: payload, not conversation) is dropped. It
// returns the object's end and what its members say.
func (r *reading) object(s string, i int, parentKey string, inList bool, depth int) (end int, o objectMembers, ok bool) {
	var f messages.Facts
	start := r.mark()
	drops := r.dropsAt(depth)
	j := skipWS(s, i+1)
	if j < len(s) && s[j] == '}' {
		end = j + 1
		r.finish(&o, &f, parentKey, inList, start, drops)
		return end, o, true
	}
	for j < len(s) {
		if s[j] != '"' {
			return 0, o, false
		}
		kend, kesc, ok := scanString(s, j)
		if !ok {
			return 0, o, false
		}
		key := s[j+1 : kend-1]
		if kesc {
			key = unescape(key)
		}
		if j = skipWS(s, kend); j >= len(s) || s[j] != ':' {
			return 0, o, false
		}
		vstart := skipWS(s, j+1)
		if vstart >= len(s) {
			return 0, o, false
		}
		f.Note(key)
		before := r.mark()
		var v value
		if c := s[vstart]; (c == '{') && messages.RoleOf(key)&(messages.CallWrapperKey|messages.ResultWrapperKey) != 0 && o.wrapped == nil {
			// The call or response a member wraps (OpenAI's function, Gemini's
			// functionCall) is read once, for itself and for this object.
			vend, w, ok := r.object(s, vstart, key, false, depth+1)
			if !ok {
				return 0, o, false
			}
			v = value{s: s, start: vstart, end: vend, kind: kindObject}
			// Kept for this object's finish, in the slot of the depth below: a sibling read
			// later writes the slot of its own children.
			slot := r.wrappedAt(depth + 1)
			*slot = w
			o.wrapped, o.wrappedKey = slot, key
		} else {
			vend, ok := r.walkAt(s, vstart, key, false, depth+1)
			if !ok {
				return 0, o, false
			}
			v = valueAt(s, vstart, vend)
		}
		if v.kind == kindString && (key == "type" || key == "role") {
			f.NoteString(key, v.text())
		}
		o.note(key, v)
		if after := r.mark(); after != before {
			drops = append(drops, dropped{key: key, from: before, to: after})
		}
		if j = skipWS(s, v.end); j >= len(s) {
			return 0, o, false
		}
		if s[j] == '}' {
			end = j + 1
			break
		}
		if s[j] != ',' {
			return 0, o, false
		}
		j = skipWS(s, j+1)
	}
	if end == 0 {
		return 0, o, false
	}
	r.finish(&o, &f, parentKey, inList, start, drops)
	clear(drops)
	r.scratch.drops[min(depth, maxDepth+1)] = drops[:0]
	if o.wrapped != nil {
		// The slot holds no document past its reading; the caller reads o's own members.
		*o.wrapped = objectMembers{}
		o.wrapped = nil
	}
	return end, o, true
}

// dropsAt is the scratch list of dropped extents of the object read at depth.
func (r *reading) dropsAt(depth int) []dropped {
	sc := r.scratch
	if sc.drops == nil {
		sc.drops = make([][]dropped, maxDepth+2)
		sc.wrapped = make([]objectMembers, maxDepth+3)
	}
	return sc.drops[min(depth, maxDepth+1)][:0]
}

// wrappedAt is the scratch slot of a wrapped object read at depth.
func (r *reading) wrappedAt(depth int) *objectMembers {
	r.dropsAt(0) // allocates the scratch space once
	return &r.scratch.wrapped[min(depth, maxDepth+2)]
}

// dropped is what one member's reading added to r.found, between two marks.
type dropped struct {
	key      string
	from, to mark
}

// valueAt is the value s[start:end] the walk just read.
func valueAt(s string, start, end int) value {
	v := value{s: s, start: start, end: end}
	switch c := s[start]; {
	case c == '{':
		v.kind = kindObject
	case c == '[':
		v.kind = kindArray
	case c == '"':
		v.kind = kindString
		v.esc = strings.IndexByte(s[start+1:end-1], '\\') >= 0
	case c == 't':
		v.kind = kindTrue
	case c == 'f':
		v.kind = kindFalse
	case c == 'n':
		v.kind = kindNull
	default:
		v.kind = kindNumber
	}
	return v
}

// finish says what the object read is, drops what its payload members held, and records
// it: a call, a response, a definition.
func (r *reading) finish(o *objectMembers, f *messages.Facts, parentKey string, inList bool, start mark, drops []dropped) {
	part := messages.Classify(f, parentKey, inList)
	if part != messages.Other || o.name != "" && o.schema {
		r.found.parts++
	}
	switch part {
	case messages.Call:
		consumed := r.call(o, parentKey, start, drops)
		// OpenAI lists an offered tool as {"type":"function","function":{name, parameters}}:
		// under a call's wrapping member, a definition.
		if r.full && o.name != "" && o.schema && !o.hasArgs {
			r.found.offers = append(r.found.offers, o.name)
		}
		_ = consumed
	case messages.Result, messages.ToolMessage:
		// What a tool returned is payload, not conversation: a sub-agent's messages
		// inside it are not this model's requests. A tool message that names no call is
		// made of parts that do (Vercel's tool-result parts): those stay.
		if o.responseID != "" || o.name != "" || part == messages.Result {
			r.truncate(start)
			if r.full {
				r.response(o)
			}
		}
	default:
		if r.full && o.name != "" && o.schema {
			r.found.offers = append(r.found.offers, o.name)
		}
	}
}

// truncate forgets what was found since m.
func (r *reading) truncate(m mark) {
	r.found.requests = r.found.requests[:m.requests]
	r.found.responses = r.found.responses[:m.responses]
	r.found.offers = r.found.offers[:m.offers]
}

// dropMembers forgets what the members keep says to drop held, the latest first.
func (r *reading) dropMembers(drops []dropped, drop func(key string) bool) {
	for k := len(drops) - 1; k >= 0; k-- {
		d := drops[k]
		if !drop(d.key) {
			continue
		}
		f := r.found
		f.requests = append(f.requests[:d.from.requests], f.requests[d.to.requests:]...)
		f.responses = append(f.responses[:d.from.responses], f.responses[d.to.responses:]...)
		f.offers = append(f.offers[:d.from.offers], f.offers[d.to.offers:]...)
	}
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

// opensContainer reports a JSON string literal (quotes included) whose text starts, after
// white space (escaped or not), with '{' or '['.
func opensContainer(raw string) bool {
	for i := 1; i < len(raw)-1; i++ {
		switch raw[i] {
		case '{', '[':
			return true
		case ' ', '\t', '\r', '\n':
			continue
		case '\\':
			if i+1 < len(raw)-1 && (raw[i+1] == 'n' || raw[i+1] == 't' || raw[i+1] == 'r') {
				i++
				continue
			}
		}
		return false
	}
	return false
}

func holdsToolWord(s string) bool {
	return strings.Contains(s, "ool") || strings.Contains(s, "unction") || strings.Contains(s, "OOL") || strings.Contains(s, "UNCTION")
}
