package redact

import (
	"hash/maphash"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
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
	// markers holds the markers of the trace being redacted by the raw JSON text they
	// replace, and texts by the text they hash (a JSON string decoded): the same payload is
	// copied into many messages, as an object in one and as a string holding it in the
	// next, and flattened messages repeat it attribute by attribute.
	markers map[uint64]marker
	texts   map[uint64]marker
	// late holds the late members of the object being read at each depth.
	late [][]lateMember
	// scans are scans of documents finished, for reuse.
	scans []*scan
	// unquoted is where markJSON decodes a string it marks.
	unquoted []byte
	// gather, while gatherMessage reads a payload, receives the values of what would be
	// marked (gathered counts them) and of text, instead of edits.
	gather   *collector
	gathered int
}

// gatherMessage adds to c the payload values of doc, a tool span's payload, read as a
// message structure in member parentKey: the values of each part a marker would replace,
// and of text members. It reports false, having added none but text, when doc is no
// message structure (no part to mark) or does not parse: the caller hunts it leaf by leaf.
func (w *rewriter) gatherMessage(doc, parentKey string, c *collector) bool {
	if !payload.LooksLikeJSONContainer(doc) || !holdsToolWord(doc) {
		return false
	}
	replaced := w.replaced
	w.gather, w.gathered = c, 0
	sc := w.takeScan(doc) // its elements are not remembered: it makes no edit
	end, ok := sc.value(skipSpace(doc, 0), parentKey, false, ctxNone, 1)
	ok = ok && skipSpace(doc, end) == len(doc)
	w.releaseScan(sc)
	w.gather = nil
	w.replaced = replaced
	return ok && w.gathered > 0
}

// memoEntry is an array element rewritten: its edits, at offsets from its start, and the
// replacements they make.
type memoEntry struct {
	edits    []edit
	replaced int
}

// memoMin is the shortest array element worth remembering.
const memoMin = 64

// reset forgets the previous trace's elements.
func (w *rewriter) reset() {
	clear(w.memo)
	clear(w.markers)
	clear(w.texts)
}

// Marker is what replaces a tool call's arguments or a tool response's content inside a
// message: the hash of the value it replaces, computed as retrystorm.args.hash and
// retrystorm.result.hash are (canonical JSON, SHA-256 or HMAC-SHA256), so an unchanged
// copy of a tool span's payload carries that span's hash.
func Marker(hash string) string { return "[redacted:" + hash + "]" }

// nothingToDo reports a value that cannot hold a tool payload part: with prompt text kept,
// only a tool call, a tool response or a tool message is rewritten, and each of them is
// named by a key or value containing "tool", "function" or "python" (any of them
// capitalised) — in the value itself, or in the member that holds it. One fast substring
// search then spares scanning text messages.
func (w *rewriter) nothingToDo(raw, parentKey string, ctx context) bool {
	if !w.keepText || ctx != ctxNone || messages.RoleOf(parentKey)&(messages.CallWrapperKey|messages.ResultWrapperKey|messages.CallListKey|messages.ResultListKey) != 0 {
		return false
	}
	return !holdsToolWord(raw)
}

// holdsToolWord reports whether s holds one of toolWords.
func holdsToolWord(s string) bool {
	for _, t := range toolWords {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

var toolWords = [...]string{"ool", "OOL", "unction", "UNCTION", "ython", "YTHON"}

// isMarker reports whether s is a marker: "[redacted:" and a lowercase hex hash, then "]".
func isMarker(s string) bool {
	const prefix = "[redacted:"
	if len(s) < len(prefix)+2 || s[:len(prefix)] != prefix || s[len(s)-1] != ']' {
		return false
	}
	for _, c := range []byte(s[len(prefix) : len(s)-1]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// holdsJSONMember reports whether s holds a JSON member: a '"' followed, after white
// space, by ':'. A message structure that does not parse is told from text that starts
// with a bracket by it.
func holdsJSONMember(s string) bool {
	for i := strings.IndexByte(s, '"'); i >= 0; {
		j := skipSpace(s, i+1)
		if j < len(s) && s[j] == ':' {
			return true
		}
		k := strings.IndexByte(s[i+1:], '"')
		if k < 0 {
			return false
		}
		i += 1 + k
	}
	return false
}

// marker is a marker as an attribute holds it (plain) and as a JSON string (quoted).
type marker struct{ plain, quoted string }

func newMarker(hash string) marker {
	m := marker{quoted: `"[redacted:` + hash + `]"`} // a hex hash needs no escaping
	m.plain = m.quoted[1 : len(m.quoted)-1]
	return m
}

// markJSON is the marker of a JSON value, with the hash the tool span's hash of the same
// value has.
func (w *rewriter) markJSON(raw string) marker {
	key := maphash.String(hashSeed, raw)
	if m, ok := w.markers[key]; ok {
		return m
	}
	var m marker
	switch raw[0] {
	case '"':
		// Decoded into scratch: a marker is kept by the text's hash alone.
		s, scratch, _ := payload.UnquoteScratch(raw, w.unquoted)
		w.unquoted = scratch
		m = w.markText(s)
	case '{', '[':
		m = w.markText(raw)
	default:
		m = newMarker(w.hasher.RawDigest(raw)) // a number or literal: its bytes
	}
	if w.markers == nil {
		w.markers = map[uint64]marker{}
	}
	w.markers[key] = m
	return m
}

// markText is the marker of a string attribute holding s (Hasher.TextDigest).
func (w *rewriter) markText(s string) marker {
	key := maphash.String(hashSeed, s)
	if m, ok := w.texts[key]; ok {
		return m
	}
	m := newMarker(w.hasher.TextDigest(s))
	if w.texts == nil {
		w.texts = map[uint64]marker{}
	}
	w.texts[key] = m
	return m
}

// knownText records that copies of s are marked with hash, as the analysis found for a
// tool span's payload (Extractor.HashedTexts), so they are marked without hashing it
// again, and returns what a kept decision remembers of it.
func (w *rewriter) knownText(s, hash string) hashedText {
	h := hashedText{sum: maphash.String(hashSeed, s), hash: hash}
	w.knownSum(h)
	return h
}

// knownSum records that copies of the text that h.sum fingerprints are marked with h.hash,
// unless the trace already marks them (a text two attempts carry: the first).
func (w *rewriter) knownSum(h hashedText) {
	if w.texts == nil {
		w.texts = map[uint64]marker{}
	}
	if _, ok := w.texts[h.sum]; !ok {
		w.texts[h.sum] = newMarker(h.hash)
	}
}

// markValue is the marker of an attribute value read whole (Hasher.PayloadDigest).
func (w *rewriter) markValue(v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return w.markText(v.Str()).plain
	}
	h, _ := w.hasher.PayloadDigest(v, nil)
	return Marker(h)
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
		return w.str(v, parentKey, inList, ctx, depth) != messageUnparseable
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

// messageRead is what a string holding a message structure turned out to hold.
type messageRead uint8

const (
	// messageText: plain text (a prompt, an answer), left for the caller.
	messageText messageRead = iota
	// messageJSON: a JSON document, rewritten; or a marker, left as it is.
	messageJSON
	// messageUnparseable: a JSON document that does not parse (the caller deletes it).
	messageUnparseable
)

// str rewrites the string attribute value v in place and says what it held. A string that
// starts with a bracket and does not parse is unparseable when it holds a JSON member
// (holdsJSONMember), and text when it holds none ("[1] Paris is …", "[Note] …"): a
// message structure cut short by a length limit holds a member once its first name is
// whole, and before that nothing of a payload. A marker (ToolSpan's, or a first tier's)
// starts with a bracket too, and is left as it is.
func (w *rewriter) str(v pcommon.Value, parentKey string, inList bool, ctx context, depth int) messageRead {
	s := v.Str()
	if isMarker(s) {
		return messageJSON
	}
	if !payload.LooksLikeJSONContainer(s) {
		return messageText
	}
	out, ok := w.document(s, parentKey, inList, ctx, depth+1)
	switch {
	case ok:
		if out != s {
			v.SetStr(out)
		}
		return messageJSON
	case holdsJSONMember(s):
		return messageUnparseable
	}
	return messageText
}

// object rewrites an attribute map that is one object of a message structure (a map-typed
// part, or the attributes of a message event).
func (w *rewriter) object(m pcommon.Map, parentKey string, inList bool, ctx context, depth int) {
	p := messages.Classify(messages.FactsOfMap(m), parentKey, inList)
	for key, v := range m.All() {
		marker, text := w.replacement(p, ctx, key, v.Type() == pcommon.ValueTypeStr)
		switch {
		case marker && v.Type() == pcommon.ValueTypeStr && isMarker(v.Str()):
			continue // marked already (by ToolSpan, or by an earlier collector): its hash stays
		case marker:
			v.SetStr(w.markValue(v))
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
