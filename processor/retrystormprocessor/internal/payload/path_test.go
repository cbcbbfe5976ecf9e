package payload

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// valuePathViaDecoder is the element-path reading over encoding/json that valuePath
// replaced, kept as the reference it is checked against.
func valuePathViaDecoder(s string, path []string) ([]byte, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	for _, p := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[p]; !ok {
			return nil, false
		}
	}
	if inner, ok := doc.(string); ok && LooksLikeJSONContainer(inner) {
		if out, err := canonicalAppend(nil, []byte(inner)); err == nil {
			return out, true
		}
	}
	var buf bytes.Buffer
	if writeCanonical(&buf, doc, 0) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

func TestValuePathReadsTheElement(t *testing.T) {
	doc := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search \"docs\"","arguments":{"q":"x","a":[1,{"b":"}"}]},"meta":"{\"z\":1, \"y\":2}"}}`
	for _, path := range [][]string{{"params", "arguments"}, {"params", "name"}, {"params", "meta"}, {"id"}, {"params"}, {"params", "nope"}, {"id", "x"}} {
		got, ok := CanonicalValuePath(pcommon.NewValueStr(doc), path)
		want, wantOK := valuePathViaDecoder(doc, path)
		if ok != wantOK || string(got) != string(want) {
			t.Errorf("path %v: got %q %v, want %q %v", path, got, ok, want, wantOK)
		}
	}
	x := NewHasher(nil)
	name, ok := x.StringField(pcommon.NewValueStr(doc), []string{"params", "name"})
	if !ok || name != `search "docs"` {
		t.Errorf("StringField = %q %v", name, ok)
	}
	if _, ok := x.StringField(pcommon.NewValueStr(doc), []string{"params", "arguments"}); ok {
		t.Error("StringField read an object as a string")
	}
}

// FuzzValuePathMatchesDecoder holds the element reading (skip to the element, canonicalise
// it) to the encoding/json reading for every document the reference canonicalises (valid,
// no trailing data, not too deep).
func FuzzValuePathMatchesDecoder(f *testing.F) {
	f.Add(`{"params":{"name":"x","arguments":{"b":1,"a":2}}}`, "params.arguments")
	f.Add(`{"a":"{\"c\":1,\"b\":[2]}"}`, "a")
	f.Add(`{"a":{"a":{"a":"\u00e9\n"}}, "a ":1}`, "a.a.a")
	f.Add(`{"result":{"content":[{"text":"x,y:}"}],"isError":false}}`, "result")
	f.Add(`{"k":1,"k":2}`, "k")
	f.Add(`{"arguments":{"card":"4111"},"kwargs":{},"arguments":{"card":"5500"}}`, "arguments")
	f.Add(`{"params":{"arguments":{"a":1}},"params":{"name":"x"},"params":{"arguments":[2]}}`, "params.arguments")
	f.Add(`{"p":{"deep":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`,"name":"x"}}`, "p.name")
	f.Add("{\"a\xff\":1}", "a\ufffd")
	f.Fuzz(func(t *testing.T, doc, dotted string) {
		// Every document encoding/json accepts: valid, no trailing data, up to its own
		// nesting limit (deeper than canonicalisation's, which only the element must meet).
		if !json.Valid([]byte(doc)) {
			return
		}
		path := strings.Split(dotted, ".")
		// The one-pass canonicaliser and the reference stop at depths one level apart (as
		// in FuzzCanonicalMatchesDecoder): elements at that edge are not compared.
		if d := elementDepth(doc, path); d >= maxDepth-1 {
			return
		}
		got, ok := CanonicalValuePath(pcommon.NewValueStr(doc), path)
		want, wantOK := valuePathViaDecoder(doc, path)
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("path %q of %q: got %q %v, want %q %v", dotted, doc, got, ok, want, wantOK)
		}
		// Elements, what redaction hunts, reads every member a repeated key names, and
		// the element the hash reads is among them.
		all, ok := elementsViaTokens(doc, path)
		if !ok {
			return
		}
		var each []string
		walkRaw([]byte(doc), path, true, func(elem []byte) bool {
			c, err := canonicalAppend(nil, elem)
			if err != nil {
				t.Fatalf("path %q of %q: element %q does not canonicalise: %v", dotted, doc, elem, err)
			}
			each = append(each, string(c))
			return true
		})
		if absentKey([]byte(doc), path) && len(all) > 0 {
			t.Fatalf("path %q of %q: passed over as spelling no key, yet it has %q", dotted, doc, all)
		}
		if !slices.Equal(each, all) {
			t.Fatalf("path %q of %q: elements %q, want every member's %q", dotted, doc, each, all)
		}
		if elem, found := rawElement([]byte(doc), path); found {
			c, _ := canonicalAppend(nil, elem)
			if !slices.Contains(each, string(c)) {
				t.Fatalf("path %q of %q: the hashed element %q is not among the hunted %q", dotted, doc, c, each)
			}
		}
	})
}

// multiNode is a JSON value decoded with every member of its objects kept, repeated keys
// included, as the reference of Elements.
type multiNode struct {
	scalar  any
	items   []multiNode
	members []multiMember
	kind    byte // 's' scalar, '[' array, '{' object
}

type multiMember struct {
	key string
	val multiNode
}

// elementsViaTokens is the canonical JSON of every element at path in doc, reading each
// object's every member through encoding/json's token stream; false for a document it
// does not read or nests too deep to compare.
func elementsViaTokens(doc string, path []string) ([]string, bool) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	root, depth, err := decodeMulti(dec)
	if err != nil || depth >= maxDepth-1 {
		return nil, false
	}
	var out []string
	var walk func(n multiNode, path []string) bool
	walk = func(n multiNode, path []string) bool {
		if len(path) == 0 {
			var buf bytes.Buffer
			if writeCanonical(&buf, n.lastWins(), 0) != nil {
				return false
			}
			out = append(out, buf.String())
			return true
		}
		for _, m := range n.members {
			if m.key == path[0] && !walk(m.val, path[1:]) {
				return false
			}
		}
		return true
	}
	return out, walk(root, path)
}

func decodeMulti(dec *json.Decoder) (multiNode, int, error) {
	tok, err := dec.Token()
	if err != nil {
		return multiNode{}, 0, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return multiNode{kind: 's', scalar: tok}, 0, nil
	}
	n := multiNode{kind: byte(delim)}
	depth := 0
	for dec.More() {
		var key string
		if delim == '{' {
			k, err := dec.Token()
			if err != nil {
				return n, 0, err
			}
			key = k.(string)
		}
		v, d, err := decodeMulti(dec)
		if err != nil {
			return n, 0, err
		}
		depth = max(depth, d)
		if delim == '{' {
			n.members = append(n.members, multiMember{key, v})
		} else {
			n.items = append(n.items, v)
		}
	}
	if _, err := dec.Token(); err != nil {
		return n, 0, err
	}
	return n, depth + 1, nil
}

// lastWins is the value encoding/json decodes n to: a repeated key's last value.
func (n multiNode) lastWins() any {
	switch n.kind {
	case '{':
		m := make(map[string]any, len(n.members))
		for _, mem := range n.members {
			m[mem.key] = mem.val.lastWins()
		}
		return m
	case '[':
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = it.lastWins()
		}
		return l
	}
	return n.scalar
}

// elementDepth is the nesting depth of the element at path (0 for a scalar, or when the
// element is absent), read through encoding/json.
func elementDepth(doc string, path []string) int {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return 0
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return 0
		}
		if v, ok = m[p]; !ok {
			return 0
		}
	}
	if s, ok := v.(string); ok && LooksLikeJSONContainer(s) {
		if json.Unmarshal([]byte(s), &v) != nil {
			return 0
		}
	}
	var depth func(any) int
	depth = func(v any) int {
		d := 0
		switch t := v.(type) {
		case []any:
			for _, e := range t {
				d = max(d, depth(e))
			}
			return d + 1
		case map[string]any:
			for _, e := range t {
				d = max(d, depth(e))
			}
			return d + 1
		}
		return 0
	}
	return depth(v)
}

// FuzzSkipStringMatchesAByteWalk holds the quote search to a walk that skips the byte
// after each backslash.
func FuzzSkipStringMatchesAByteWalk(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"a\\"`, `"a\\\"b\\\\"x`, `"\`, `"abc`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) == 0 || doc[0] != '"' {
			return
		}
		wantEnd, wantOK := 0, false
		for j := 1; j < len(doc); j++ {
			if doc[j] == '\\' {
				j++
				continue
			}
			if doc[j] == '"' {
				wantEnd, wantOK = j+1, true
				break
			}
		}
		if end, ok := skipString(doc, 0); end != wantEnd || ok != wantOK {
			t.Fatalf("skipString(%q) = %d %v, want %d %v", doc, end, ok, wantEnd, wantOK)
		}
	})
}

// FuzzStringFieldMatchesTheCanonicalReading holds StringField, which decodes a string element
// where it stands, to reading the element's canonical form and unquoting it.
func FuzzStringFieldMatchesTheCanonicalReading(f *testing.F) {
	f.Add(`{"params":{"name":"get_weather","arguments":{"city":"Paris"}}}`, "params.name")
	f.Add(`{"a":"x\u00e9\"y"}`, "a")
	f.Add(`{"a":"{\"b\":1}"}`, "a")
	f.Add(`{"a":"{\"b\":"}`, "a")
	f.Add("{\"a\":\"\xff\xfe\"}", "a")
	f.Add(`{"a":"\ud800"}`, "a")
	f.Add(`{"a":1}`, "a")
	f.Add("{\"a\":\"x\x01\"}", "a")
	f.Fuzz(func(t *testing.T, doc, dotted string) {
		path := strings.Split(dotted, ".")
		v := pcommon.NewValueStr(doc)
		var want string
		b, wantOK := CanonicalValuePath(v, path)
		if wantOK && len(b) > 0 && b[0] == '"' {
			want, wantOK = unquote(b)
		} else {
			wantOK = false
		}
		got, ok := NewHasher(nil).StringField(v, path)
		if got != want || ok != wantOK {
			t.Fatalf("StringField(%q, %q) = %q %v, want %q %v", doc, dotted, got, ok, want, wantOK)
		}
	})
}

// TestDigestFingerprintFollowsTheDigest: one fingerprint where PayloadDigest gives one
// digest, different fingerprints where it gives different digests, and none where it gives
// none.
func TestDigestFingerprintFollowsTheDigest(t *testing.T) {
	x := NewHasher(nil)
	docs := []struct {
		doc  string
		path []string
	}{
		{`{"a":1,"b":[true,"x"]}`, nil},
		{` { "b" : [ true , "x" ] , "a" : 1 } `, nil},
		{`{"args":{"a":1,"b":[true,"x"]}}`, []string{"args"}},
		{`{"a":2,"b":[true,"x"]}`, nil},
		{`{"a":1,"b":[true,"y"]}`, nil},
		{`"plain text"`, nil},
		{`{"a":1,"b":[true,"x"]`, nil},
	}
	for i, a := range docs {
		for _, b := range docs[i:] {
			va, vb := pcommon.NewValueStr(a.doc), pcommon.NewValueStr(b.doc)
			ha, okA := x.PayloadDigest(va, a.path)
			hb, okB := x.PayloadDigest(vb, b.path)
			pa, pokA := x.DigestFingerprint(va, a.path)
			pb, pokB := x.DigestFingerprint(vb, b.path)
			if pokA != okA || pokB != okB {
				t.Fatalf("DigestFingerprint ok %v/%v where PayloadDigest ok %v/%v for %q, %q", pokA, pokB, okA, okB, a.doc, b.doc)
			}
			if okA && okB && (ha == hb) != (pa == pb) {
				t.Errorf("%q and %q: digests equal %v, fingerprints equal %v", a.doc, b.doc, ha == hb, pa == pb)
			}
		}
	}
}
