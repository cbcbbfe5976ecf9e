package payload

import (
	"bytes"
	"iter"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// A path source (key#a.b) is read by one walk, in a map attribute (walkMap) and in a JSON
// string document (walkRaw) alike, so the hash, the triage, the texts copies carry and
// redaction cannot read different members of one document:
//
//   - a step names an object member (or a map key) by its decoded name: escapes in the
//     document are resolved, invalid UTF-8 reads as U+FFFD, as encoding/json reads it;
//   - arrays are not indexed: a step into an array, or into a scalar, finds nothing;
//   - a member repeated on the path reads as its last value, the one JSON.parse and
//     encoding/json hand the application (the element: mapElement, rawElement);
//   - redaction also reads every other member a repeated key names (Elements), in document
//     order, the element last among them: it hunts the element and what the document
//     carries besides, never less than what is hashed.

// walkMap yields the element at path inside the map attribute v: with every false, the
// one element (a repeated key's last value); with every true, the element at every member
// the path's keys name, in order. It reports false when yield stopped it.
func walkMap(v pcommon.Value, path []string, every bool, yield func(pcommon.Value) bool) bool {
	if len(path) == 0 {
		return yield(v)
	}
	if v.Type() != pcommon.ValueTypeMap {
		return true
	}
	var last pcommon.Value
	found := false
	for k, e := range v.Map().All() {
		if k != path[0] {
			continue
		}
		if every {
			if !walkMap(e, path[1:], true, yield) {
				return false
			}
			continue
		}
		last, found = e, true
	}
	if !found {
		return true
	}
	return walkMap(last, path[1:], false, yield)
}

// walkRaw is walkMap over the JSON document doc, yielding elements as the raw bytes they
// are in doc. A member is skipped over, not parsed (skipRaw); the element found is
// canonicalised, which checks it whole. With every false an object on the path must close
// for its last member to be known, so a document broken after the element yields nothing;
// with every true a member that does not parse ends the reading of its object, what came
// before it having been yielded.
func walkRaw(doc []byte, path []string, every bool, yield func([]byte) bool) bool {
	if len(path) == 0 {
		return yield(doc)
	}
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return true
	}
	var last []byte
	i = skipSpace(doc, i+1)
	for {
		if i >= len(doc) || doc[i] != '"' {
			return true
		}
		keyEnd, ok := skipString(doc, i)
		if !ok {
			return true
		}
		match := keyIs(doc[i:keyEnd], path[0])
		i = skipSpace(doc, keyEnd)
		if i >= len(doc) || doc[i] != ':' {
			return true
		}
		start := skipSpace(doc, i+1)
		end, ok := skipRaw(doc, start)
		if !ok {
			return true
		}
		switch {
		case match && every:
			if !walkRaw(doc[start:end], path[1:], true, yield) {
				return false
			}
		case match:
			last = doc[start:end]
		}
		i = skipSpace(doc, end)
		if i >= len(doc) {
			return true
		}
		if doc[i] == '}' {
			break
		}
		if doc[i] != ',' {
			return true
		}
		i = skipSpace(doc, i+1)
	}
	if last == nil {
		return true
	}
	return walkRaw(last, path[1:], false, yield)
}

// mapElement is the element at path inside the map v, false when there is none.
func mapElement(v pcommon.Value, path []string) (pcommon.Value, bool) {
	var elem pcommon.Value
	found := false
	walkMap(v, path, false, func(e pcommon.Value) bool {
		elem, found = e, true
		return false
	})
	return elem, found
}

// rawElement returns the raw bytes of the element at path inside the JSON document doc.
func rawElement(doc []byte, path []string) ([]byte, bool) {
	if len(path) > 0 && absentKey(doc, path) {
		return nil, false
	}
	var elem []byte
	found := false
	walkRaw(doc, path, false, func(e []byte) bool {
		elem, found = e, true
		return false
	})
	return elem, found
}

// Elements yields what redaction hunts at path inside v, a map or a string holding a JSON
// object: the element at every member the path's keys name, in document order, so the
// element the hash reads (a repeated key's last value) comes last of those on its branch.
// A string element is yielded decoded, any other element of a JSON string as its JSON text.
func Elements(v pcommon.Value, path []string) iter.Seq[pcommon.Value] {
	return func(yield func(pcommon.Value) bool) {
		switch {
		case len(path) == 0:
			yield(v)
		case v.Type() == pcommon.ValueTypeMap:
			walkMap(v, path, true, yield)
		case v.Type() == pcommon.ValueTypeStr && LooksLikeJSONContainer(v.Str()):
			doc := stringBytes(v.Str())
			if absentKey(doc, path) {
				return
			}
			walkRaw(doc, path, true, func(elem []byte) bool {
				if elem[0] == '"' {
					if s, ok := Unquote(unsafeString(elem)); ok {
						return yield(pcommon.NewValueStr(s))
					}
				}
				return yield(pcommon.NewValueStr(unsafeString(elem)))
			})
		}
	}
}

// absentKey reports a document that spells path's ASCII last key nowhere and holds no
// escape that could spell it (invalid UTF-8 decodes to U+FFFD, never to ASCII): it has no
// element at path. Most documents a path source is tried on (a result that is not
// LangChain's ToolMessage) are passed over so, without being parsed.
func absentKey(doc []byte, path []string) bool {
	last := path[len(path)-1]
	return isASCII(last) && !strings.Contains(unsafeString(doc), last) && bytes.IndexByte(doc, '\\') < 0
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// keyIs reports whether the JSON string token tok spells key once decoded (escapes
// resolved, invalid UTF-8 read as U+FFFD, as encoding/json does).
func keyIs(tok []byte, key string) bool {
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body) == key
	}
	s, ok := unquote(tok)
	return ok && s == key
}
