package redact

import (
	"hash/maphash"
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
)

// A message structure is rewritten in one pass over its bytes: the scan validates the
// document as it reads it (the grammar the payload hashes use, which is encoding/json's),
// classifies each object from its members, and notes every change as an edit of the
// document's bytes; the output is the document with its edits applied, written once.
//
// What an object is ("type", "role", a call id) may be said after the members it changes
// the reading of: SDKs that sort keys write "arguments" before "type". Such a string member
// waits for the object's end, then is read (its end is known, so it costs nothing more), as
// does a call's arguments or a response's result (found by its brackets alone: it is most
// often a marker); another such container (a message's content or parts) is read at once
// as what the object seems so far, and read again only if the object turns out otherwise. A JSON document inside a JSON string (a tool
// call's arguments as OpenAI and Vercel send them) is decoded and scanned in turn, and
// quoted again when it changed.

// scan rewrites one JSON document.
type scan struct {
	w *rewriter
	s string
	// edits replace byte ranges of s, none inside another; dead ones (from < 0) are
	// skipped. An object that read a member late sorts its own edits.
	edits []edit
	// inMemo: the scan is inside an array element it will remember, so it remembers no
	// element below.
	inMemo bool
}

type edit struct {
	from, to int
	text     string
}

// lateMember is a member whose reading depends on what its object is: a string waiting
// for the object's end, or a container read as what the object seemed (seen) and read
// again if that was wrong.
type lateMember struct {
	key      string
	from, to int
	// container: its edits are edits[editsFrom:editsTo], making replaced replacements.
	container          bool
	seen               messages.Part
	editsFrom, editsTo int
	replaced           int
}

// document rewrites doc, a JSON value in member parentKey of its parent (an element of it
// when inList). ok is false when doc does not parse.
func (w *rewriter) document(doc, parentKey string, inList bool, ctx context, depth int) (out string, ok bool) {
	if w.nothingToDo(doc, parentKey, ctx) {
		return doc, validJSON(doc)
	}
	sc := w.takeScan(doc)
	defer w.releaseScan(sc)
	i := skipSpace(doc, 0)
	end, ok := sc.value(i, parentKey, inList, ctx, depth)
	if !ok || skipSpace(doc, end) != len(doc) {
		return "", false
	}
	return sc.apply(0, len(doc), sc.edits), true
}

func (w *rewriter) takeScan(doc string) *scan {
	if n := len(w.scans); n > 0 {
		sc := w.scans[n-1]
		w.scans = w.scans[:n-1]
		sc.s = doc
		return sc
	}
	return &scan{w: w, s: doc}
}

func (w *rewriter) releaseScan(sc *scan) {
	sc.s = ""
	sc.edits = sc.edits[:0]
	sc.inMemo = false
	w.scans = append(w.scans, sc)
}

func (sc *scan) edit(from, to int, text string) {
	sc.edits = append(sc.edits, edit{from, to, text})
}

// apply returns s[from:to] with edits, which lie inside it, applied.
func (sc *scan) apply(from, to int, edits []edit) string {
	if len(edits) == 0 {
		return sc.s[from:to]
	}
	var b strings.Builder
	b.Grow(to - from)
	done := from
	for _, e := range edits {
		if e.from < 0 {
			continue
		}
		b.WriteString(sc.s[done:e.from])
		b.WriteString(e.text)
		done = e.to
	}
	b.WriteString(sc.s[done:to])
	return b.String()
}

// value reads the value starting at s[i] and returns its end.
func (sc *scan) value(i int, parentKey string, inList bool, ctx context, depth int) (int, bool) {
	if depth >= maxDepth {
		// Deeper parts are validated, not rewritten: scrubbing covers them.
		return valueEnd(sc.s, i)
	}
	if i >= len(sc.s) {
		return 0, false
	}
	switch sc.s[i] {
	case '{':
		return sc.object(i, parentKey, inList, ctx, depth)
	case '[':
		return sc.array(i, parentKey, ctx, depth)
	case '"':
		end, ok := stringEnd(sc.s, i)
		if ok {
			sc.str(i, end, parentKey, inList, ctx, depth)
		}
		return end, ok
	}
	return scalarEnd(sc.s, i)
}

// str reads the checked string token s[from:to]: the JSON document inside it, if it holds
// one that parses, is rewritten.
func (sc *scan) str(from, to int, parentKey string, inList bool, ctx context, depth int) {
	if !holdsContainer(sc.s[from:to]) {
		return
	}
	str, ok := unquote(sc.s[from:to])
	if !ok {
		return
	}
	if out, ok := sc.w.document(str, parentKey, inList, ctx, depth+1); ok && out != str {
		sc.edit(from, to, quote(out))
	}
}

// array reads the array at s[start]. Its elements sit in parentKey too.
func (sc *scan) array(start int, parentKey string, ctx context, depth int) (int, bool) {
	s := sc.s
	i := skipSpace(s, start+1)
	if i < len(s) && s[i] == ']' {
		return i + 1, true
	}
	for {
		end, ok := sc.element(i, parentKey, ctx, depth+1)
		if !ok {
			return 0, false
		}
		i = skipSpace(s, end)
		if i >= len(s) {
			return 0, false
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// element reads an array element. The outermost long elements are remembered for the
// trace: a model span's input repeats the conversation of every earlier span, so most of
// its messages were rewritten before, and a remembered one costs a hash of its bytes.
func (sc *scan) element(i int, parentKey string, ctx context, depth int) (int, bool) {
	s := sc.s
	if sc.inMemo || sc.w.gather != nil || depth >= maxDepth || i >= len(s) || s[i] != '{' && s[i] != '[' {
		return sc.value(i, parentKey, true, ctx, depth)
	}
	end, ok := containerEnd(s, i)
	if !ok || end-i < memoMin {
		return sc.value(i, parentKey, true, ctx, depth)
	}
	key := memoKey(parentKey, ctx, depth, s[i:end])
	if e, ok := sc.w.memo[key]; ok {
		sc.w.replaced += e.replaced
		for _, ed := range e.edits {
			sc.edit(ed.from+i, ed.to+i, ed.text)
		}
		return end, true
	}
	first, before := len(sc.edits), sc.w.replaced
	sc.inMemo = true
	end2, ok := sc.value(i, parentKey, true, ctx, depth)
	sc.inMemo = false
	if !ok || end2 != end {
		return 0, false
	}
	e := memoEntry{replaced: sc.w.replaced - before}
	for _, ed := range sc.edits[first:] {
		if ed.from >= 0 {
			e.edits = append(e.edits, edit{ed.from - i, ed.to - i, ed.text})
		}
	}
	if sc.w.memo == nil {
		sc.w.memo = map[uint64]memoEntry{}
	}
	sc.w.memo[key] = e
	return end, true
}

// object reads the object at s[start].
func (sc *scan) object(start int, parentKey string, inList bool, ctx context, depth int) (int, bool) {
	s := sc.s
	first := len(sc.edits)
	late := sc.w.lateScratch(depth)
	var f messages.Facts
	i := skipSpace(s, start+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return 0, false
		}
		keyEnd, ok := stringEnd(s, i)
		if !ok {
			return 0, false
		}
		key, ok := unquote(s[i:keyEnd])
		if !ok {
			return 0, false
		}
		if i = skipSpace(s, keyEnd); i >= len(s) || s[i] != ':' {
			return 0, false
		}
		i = skipSpace(s, i+1)
		if i >= len(s) {
			return 0, false
		}
		f.Note(key)
		// A string's end is found once, whoever reads it.
		strEnd := -1
		if s[i] == '"' {
			if strEnd, ok = stringEnd(s, i); !ok {
				return 0, false
			}
		}
		p := messages.Classify(&f, parentKey, inList)
		var end int
		switch {
		case f.Typed != messages.Other || !dependsOnPart(ctx, key, s, i, strEnd):
			end, ok = sc.member(p, ctx, key, i, strEnd, depth)
		case strEnd >= 0 || messages.RoleOf(key)&messages.ArgKey != 0 || messages.RoleOf(key)&messages.ResultKey != 0 && key != "content":
			// A string's end is known. A call's arguments or a response's result is most
			// often a marker once the object's type is read: it is found by its brackets
			// alone and read once, then.
			end, ok = strEnd, true
			if strEnd < 0 {
				end, ok = extentOf(s, i)
			}
			late = append(late, lateMember{key: key, from: i, to: end})
		default:
			m := lateMember{key: key, from: i, container: true, seen: p, editsFrom: len(sc.edits), replaced: sc.w.replaced}
			end, ok = sc.member(p, ctx, key, i, -1, depth)
			m.to, m.editsTo, m.replaced = end, len(sc.edits), sc.w.replaced-m.replaced
			late = append(late, m)
		}
		if !ok {
			return 0, false
		}
		if strEnd >= 0 && (key == "type" || key == "role") {
			str, _ := unquote(s[i:strEnd])
			f.NoteString(key, str)
		}
		if i = skipSpace(s, end); i >= len(s) {
			return 0, false
		}
		if s[i] == ',' {
			i = skipSpace(s, i+1)
			continue
		}
		if s[i] != '}' {
			return 0, false
		}
		i++
		break
	}
	sc.w.late[depth] = late
	if len(late) > 0 && !sc.readLate(late, messages.Classify(&f, parentKey, inList), ctx, first, depth) {
		return 0, false
	}
	return i, true
}

// readLate reads the late members of an object classified p, whose edits start at first.
func (sc *scan) readLate(late []lateMember, p messages.Part, ctx context, first, depth int) bool {
	moved := false
	for _, m := range late {
		if m.container {
			if m.seen == p || sc.w.sameReading(m.seen, p, ctx, m.key) {
				continue
			}
			for j := m.editsFrom; j < m.editsTo; j++ {
				sc.edits[j].from = -1
			}
			sc.w.replaced -= m.replaced
			moved = true
		}
		moved = moved || len(sc.edits) > first && sc.edits[len(sc.edits)-1].to > m.from
		if end, ok := sc.member(p, ctx, m.key, m.from, m.to, depth); !ok || end != m.to {
			return false
		}
	}
	if moved {
		edits := slices.DeleteFunc(sc.edits[first:], func(e edit) bool { return e.from < 0 })
		slices.SortFunc(edits, func(a, b edit) int { return a.from - b.from })
		sc.edits = sc.edits[:first+len(edits)]
	}
	return true
}

// member reads the value of member key at s[i] of an object classified p; strEnd is the
// end of a string value, -1 when the value is not a string or its end is not yet known.
func (sc *scan) member(p messages.Part, ctx context, key string, i, strEnd, depth int) (int, bool) {
	s := sc.s
	isString := s[i] == '"'
	if isString && strEnd < 0 {
		var ok bool
		if strEnd, ok = stringEnd(s, i); !ok {
			return 0, false
		}
	}
	marker, text := sc.w.replacement(p, ctx, key, isString)
	if marker && isString && isMarker(s[i+1:strEnd-1]) {
		return strEnd, true // marked already (by an earlier collector): its hash stays
	}
	if marker {
		end, from, to, ok := sc.markedPart(i, strEnd, isString)
		if !ok {
			return 0, false
		}
		if g := sc.w.gather; g != nil {
			// Gathering a payload's values: what a marker stands for is hunted whole.
			g.addRaw(s[from:to], depth)
			sc.w.gathered++
			return end, true
		}
		sc.w.replaced++
		sc.edit(from, to, sc.w.markJSON(s[from:to]).quoted)
		return end, true
	}
	if g := sc.w.gather; g != nil && isString && messages.RoleOf(key)&messages.TextKey != 0 && !isMarker(s[i+1:strEnd-1]) {
		g.addRaw(s[i:strEnd], depth) // text is hunted whole, then read on
	}
	switch {
	case text && isString:
		sc.w.replaced++
		sc.edit(i, strEnd, `"`+Scrubbed+`"`)
		return strEnd, true
	case isString:
		if depth+1 < maxDepth {
			sc.str(i, strEnd, key, false, childContext(p, ctx, key), depth+1)
		}
		return strEnd, true
	}
	return sc.value(i, key, false, childContext(p, ctx, key), depth+1)
}

// markedPart returns the end of the value at s[i] (a string ending at strEnd) that a
// marker replaces, and the part of it the marker stands for: all of it, or the value of a
// typed output (which keeps its type).
func (sc *scan) markedPart(i, strEnd int, isString bool) (end, from, to int, ok bool) {
	if isString {
		return strEnd, i, strEnd, true
	}
	if end, ok = valueEnd(sc.s, i); !ok {
		return 0, 0, 0, false
	}
	if f, t, typed := typedOutputValue(sc.s[i:end]); typed {
		return end, i + f, i + t, true
	}
	return end, i, end, true
}

// dependsOnPart reports whether the reading of member key, whose value starts at s[i] (a
// string ending at strEnd), can depend on what its object is: a call's arguments, a
// response's content and a tool message's content or parts are read so, and a container
// under tool text is read as text unless its object is a call or a response.
func dependsOnPart(ctx context, key string, s string, i, strEnd int) bool {
	if messages.RoleOf(key)&(messages.ArgKey|messages.ResultKey) != 0 {
		return true
	}
	nested := s[i] == '{' || s[i] == '[' || strEnd >= 0 && holdsContainer(s[i:strEnd])
	return nested && (key == "parts" || ctx != ctxNone)
}

// sameReading reports whether member key reads alike in objects classified a and b.
func (w *rewriter) sameReading(a, b messages.Part, ctx context, key string) bool {
	ma, ta := w.replacement(a, ctx, key, false)
	mb, tb := w.replacement(b, ctx, key, false)
	return ma == mb && ta == tb && (ma || childContext(a, ctx, key) == childContext(b, ctx, key))
}

// lateScratch is the scratch space for the late members of an object at depth.
func (w *rewriter) lateScratch(depth int) []lateMember {
	for len(w.late) <= depth {
		w.late = append(w.late, nil)
	}
	return w.late[depth][:0]
}

// memoKey identifies an array element by what its rewriting depends on.
func memoKey(parentKey string, ctx context, depth int, raw string) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	h.WriteString(parentKey)
	h.WriteByte(byte(ctx))
	h.WriteByte(byte(depth))
	h.WriteString(raw)
	return h.Sum64()
}

// extentOf returns the end of the value at s[i]: a container's by its brackets alone (the
// member is read whole later), a scalar's checked.
func extentOf(s string, i int) (int, bool) {
	if s[i] == '{' || s[i] == '[' {
		return containerEnd(s, i)
	}
	return scalarEnd(s, i)
}
