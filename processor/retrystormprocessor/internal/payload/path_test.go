package payload

import (
	"bytes"
	"encoding/json"
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
	name, ok := x.StringAt(pcommon.NewValueStr(doc), []string{"params", "name"})
	if !ok || name != `search "docs"` {
		t.Errorf("StringAt = %q %v", name, ok)
	}
	if _, ok := x.StringAt(pcommon.NewValueStr(doc), []string{"params", "arguments"}); ok {
		t.Error("StringAt read an object as a string")
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
	})
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

// FuzzStringAtMatchesTheCanonicalReading holds StringAt, which decodes a string element
// where it stands, to reading the element's canonical form and unquoting it.
func FuzzStringAtMatchesTheCanonicalReading(f *testing.F) {
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
		got, ok := NewHasher(nil).StringAt(v, path)
		if got != want || ok != wantOK {
			t.Fatalf("StringAt(%q, %q) = %q %v, want %q %v", doc, dotted, got, ok, want, wantOK)
		}
	})
}

// TestPathPrintFollowsTheDigest: one print where ValuePath gives one digest, different
// prints where it gives different digests, and no print where it gives none.
func TestPathPrintFollowsTheDigest(t *testing.T) {
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
			ha, okA := x.ValuePath(va, a.path)
			hb, okB := x.ValuePath(vb, b.path)
			pa, pokA := x.PathPrint(va, a.path)
			pb, pokB := x.PathPrint(vb, b.path)
			if pokA != okA || pokB != okB {
				t.Fatalf("PathPrint ok %v/%v where ValuePath ok %v/%v for %q, %q", pokA, pokB, okA, okB, a.doc, b.doc)
			}
			if okA && okB && (ha == hb) != (pa == pb) {
				t.Errorf("%q and %q: digests equal %v, prints equal %v", a.doc, b.doc, ha == hb, pa == pb)
			}
		}
	}
}
