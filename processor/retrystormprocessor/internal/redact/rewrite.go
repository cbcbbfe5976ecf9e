package redact

import (
	"hash/maphash"
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// maxDepth bounds how deep message structures are walked, JSON inside JSON strings
// included, so hostile input cannot exhaust the stack. Deeper parts are left to scrubbing.
const maxDepth = 32

// rewriter replaces the tool payloads inside message structures with markers. It holds a
// hasher and is not safe for concurrent use.
type rewriter struct {
	hasher   *payload.Hasher
	keepText bool
	// replaced counts markers and text replacements written since the last reset.
	replaced int
	// memo holds rewritten array elements of the trace being redacted: a model span's input
	// repeats the conversation every earlier span carried, so most elements were seen.
	memo map[uint64]memoEntry
	// hashes holds the markers' hashes of the trace being redacted, by the raw text they
	// replace: the same payload is copied into many messages.
	hashes map[uint64]string
	// scratch holds the members of the object being rewritten at each depth.
	scratch [][]member
}

type memoEntry struct {
	out      string
	replaced int
}

// memoMin is the shortest array element worth remembering.
const memoMin = 64

// reset forgets the previous trace's elements.
func (w *rewriter) reset() {
	clear(w.memo)
	clear(w.hashes)
}

// Marker is what replaces a tool call's arguments or a tool response's content inside a
// message: the hash of the value it replaces, computed as retrystorm.args.hash and
// retrystorm.result.hash are (canonical JSON, SHA-256 or HMAC-SHA256), so an unchanged
// copy of a tool span's payload carries that span's hash.
func Marker(hash string) string { return "[redacted:" + hash + "]" }

// jsonDocument rewrites a JSON document. ok is false when it does not parse.
func (w *rewriter) jsonDocument(doc string) (out string, ok bool) {
	if !gjson.Valid(doc) {
		return "", false
	}
	return w.json(gjson.Parse(doc), "", false, ctxNone, 0), true
}

// json returns the raw text of r rewritten; r sits in member parentKey of its parent (an
// element of it when inList).
func (w *rewriter) json(r gjson.Result, parentKey string, inList bool, ctx context, depth int) string {
	if depth >= maxDepth || w.nothingToDo(r.Raw, parentKey, ctx) {
		return r.Raw
	}
	switch {
	case r.IsObject():
		members := w.members(r, depth)
		p := classify(fieldsOf(members), parentKey, inList)
		return w.spliceMembers(r, members, func(key string, v gjson.Result) (string, bool) {
			marker, text := w.replacement(p, ctx, key, v.Type == gjson.String)
			switch {
			case marker:
				w.replaced++
				return quote(Marker(w.hashJSON(v))), true
			case text && v.Type == gjson.String:
				w.replaced++
				return quote(Scrubbed), true
			case text && v.IsArray():
				// Text made of parts: walk it, its text parts are replaced in turn.
			}
			out := w.json(v, key, false, childContext(p, ctx, key), depth+1)
			return out, out != v.Raw
		})
	case r.IsArray():
		return w.spliceMembers(r, w.members(r, depth), func(_ string, v gjson.Result) (string, bool) {
			if len(v.Raw) < memoMin {
				out := w.json(v, parentKey, true, ctx, depth+1)
				return out, out != v.Raw
			}
			key := memoKey(parentKey, ctx, depth, v.Raw)
			if e, ok := w.memo[key]; ok {
				w.replaced += e.replaced
				return e.out, e.out != v.Raw
			}
			before := w.replaced
			out := w.json(v, parentKey, true, ctx, depth+1)
			if w.memo == nil {
				w.memo = map[uint64]memoEntry{}
			}
			w.memo[key] = memoEntry{out: out, replaced: w.replaced - before}
			return out, out != v.Raw
		})
	case r.Type == gjson.String && payload.LooksLikeJSONContainer(r.Str) && gjson.Valid(r.Str):
		// JSON inside a JSON string (Vercel's tool-call input, OpenAI's arguments, LangChain's
		// serialised messages): rewritten inside and quoted again.
		in := gjson.Parse(r.Str)
		out := w.json(in, parentKey, inList, ctx, depth+1)
		if out == in.Raw {
			return r.Raw
		}
		return quote(out)
	}
	return r.Raw
}

// nothingToDo reports a value that cannot hold a tool payload part: with prompt text kept,
// only a tool call, a tool response or a tool message is rewritten, and each of them is
// named by a key or value containing "tool", "function" or "python" (any of them
// capitalised) — in the value itself, or in the member that holds it. One fast substring
// search then spares parsing text messages and plain parts.
func (w *rewriter) nothingToDo(raw, parentKey string, ctx context) bool {
	if !w.keepText || ctx != ctxNone || callWrappers[parentKey] || resultWrappers[parentKey] ||
		callLists[parentKey] || resultLists[parentKey] {
		return false
	}
	for _, t := range toolWords {
		if strings.Contains(raw, t) {
			return false
		}
	}
	return true
}

var toolWords = [...]string{"ool", "OOL", "unction", "UNCTION", "ython", "YTHON"}

// member is one member of a JSON object.
type member struct {
	key string
	v   gjson.Result
}

// members lists the members of object r (or the elements of array r, with empty keys), in
// scratch space of its depth.
func (w *rewriter) members(r gjson.Result, depth int) []member {
	for len(w.scratch) <= depth {
		w.scratch = append(w.scratch, nil)
	}
	ms := w.scratch[depth][:0]
	r.ForEach(func(k, v gjson.Result) bool {
		ms = append(ms, member{k.Str, v})
		return true
	})
	w.scratch[depth] = ms
	return ms
}

// spliceMembers rewrites the members (or elements) of container r, listed by members,
// keeping everything between them (order, spacing) as it was.
func (w *rewriter) spliceMembers(r gjson.Result, ms []member, rewrite func(key string, v gjson.Result) (string, bool)) string {
	var b strings.Builder
	done := 0
	for _, m := range ms {
		out, changed := rewrite(m.key, m.v)
		at := m.v.Index - r.Index
		if changed && at >= done && at+len(m.v.Raw) <= len(r.Raw) && r.Raw[at:at+len(m.v.Raw)] == m.v.Raw {
			if b.Len() == 0 {
				b.Grow(len(r.Raw))
			}
			b.WriteString(r.Raw[done:at])
			b.WriteString(out)
			done = at + len(m.v.Raw)
		}
	}
	if done == 0 {
		return r.Raw
	}
	b.WriteString(r.Raw[done:])
	return b.String()
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

// hashJSON is the hash of a JSON value as the tool span's hash of the same value would be.
func (w *rewriter) hashJSON(v gjson.Result) string {
	key := maphash.String(hashSeed, v.Raw)
	if h, ok := w.hashes[key]; ok {
		return h
	}
	h := w.hashRaw(v)
	if w.hashes == nil {
		w.hashes = map[uint64]string{}
	}
	w.hashes[key] = h
	return h
}

func (w *rewriter) hashRaw(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return w.hasher.Value(pcommon.NewValueStr(v.Str))
	case gjson.JSON:
		return w.hasher.Value(pcommon.NewValueStr(v.Raw))
	}
	return w.hasher.Sum([]byte(v.Raw))
}

// quote is s as a JSON string, escaped as JSON.stringify escapes.
func quote(s string) string { return `"` + jsonEscape(s) + `"` }

// value rewrites an attribute value holding a message structure in place. It reports false
// when the value is a JSON document that does not parse (the caller deletes it).
func (w *rewriter) value(v pcommon.Value, parentKey string, inList bool, ctx context, depth int) bool {
	if depth >= maxDepth {
		return true
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := v.Str()
		if !payload.LooksLikeJSONContainer(s) {
			return true
		}
		if !gjson.Valid(s) {
			return false
		}
		in := gjson.Parse(s)
		if out := w.json(in, parentKey, inList, ctx, depth+1); out != s {
			v.SetStr(out)
		}
	case pcommon.ValueTypeMap:
		w.object(v.Map(), parentKey, inList, ctx, depth+1)
	case pcommon.ValueTypeSlice:
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			if !w.value(sl.At(i), parentKey, true, ctx, depth+1) {
				sl.At(i).SetStr(Scrubbed)
				w.replaced++
			}
		}
	}
	return true
}

// object rewrites an attribute map that is one object of a message structure (a map-typed
// part, or the attributes of a message event).
func (w *rewriter) object(m pcommon.Map, parentKey string, inList bool, ctx context, depth int) {
	p := classify(mapFields{m}, parentKey, inList)
	for key, v := range m.All() {
		marker, text := w.replacement(p, ctx, key, v.Type() == pcommon.ValueTypeStr)
		switch {
		case marker:
			v.SetStr(Marker(w.hasher.Value(v)))
			w.replaced++
			continue
		case text && v.Type() == pcommon.ValueTypeStr:
			v.SetStr(Scrubbed)
			w.replaced++
			continue
		}
		if !w.value(v, key, false, childContext(p, ctx, key), depth) {
			v.SetStr(Scrubbed)
			w.replaced++
		}
	}
}
