package payload

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestValidJSONAgreesWithTheCanonicalizer(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, ` { "a" : [ 1 , -2.5e+3 , true , false , null , "x\u00e9\n" ] } `,
		`{"a":1,}`, `[1,]`, `{,}`, `[`, `{"a"}`, `{"a":}`, `"\x"`, "\"a\x01\"", `01`, `1.`, `-`,
		`1e`, `tru`, `nulls`, `{"a":1}x`, `[1 2]`, `{"a":1 "b":2}`, `"\u12"`, "\"\xff\"", `{"a":{"b":[]}}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 65) + strings.Repeat("]", 65),
		strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64), `{"a":[}`, `[{]`,
	} {
		_, err := canonicalAppend(nil, []byte(doc))
		if got, want := validJSON([]byte(doc)), err == nil; got != want {
			t.Errorf("validJSON(%q) = %v, canonicalizer accepts: %v", doc, got, want)
		}
	}
}

// FuzzValidJSONAgreesWithTheCanonicalizer: validJSON accepts exactly what the canonicalizer
// does, so a fingerprint taken without canonicalising falls through to the same source.
func FuzzValidJSONAgreesWithTheCanonicalizer(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\u00e9"}]}`, `[1,]`, `{"a" : -0.5E-7 }`, `"\ud800"`, strings.Repeat("[", 65)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		_, err := canonicalAppend(nil, doc)
		if got, want := validJSON(doc), err == nil; got != want {
			t.Fatalf("validJSON(%q) = %v, canonicalizer accepts: %v", doc, got, want)
		}
	})
}

// FuzzFingerprintAgreesWithDigest: ResultFingerprint (what triage remembers) accepts and
// fingerprints exactly what ResultDigest does (what the analysis remembers), on any
// document, valid or not; and the digest is of the canonical form, also when an already
// canonical document is hashed where it stands.
func FuzzFingerprintAgreesWithDigest(f *testing.F) {
	f.Add(`{"result":{"content":[{"text":"x"}],"isError":false}}`, "result")
	f.Add(`{"result":{"a":[1,]},"x":1}`, "result")
	f.Add(`{"result":"{\"b\":1}"}`, "result")
	f.Add(`{"a":1}`, "")
	f.Add(`{"b":[1,{"c":2}],"a":{"z":1,"y":2}}`, "b")
	f.Add(`[1,2]`, "")
	f.Add(`{"x":{"b":1,"a":2}}`, "x")
	f.Add(`{"result":"{"}`, "result")
	f.Fuzz(func(t *testing.T, doc, dotted string) {
		var path []string
		if dotted != "" {
			path = strings.Split(dotted, ".")
		}
		v := pcommon.NewValueStr(doc)
		x := NewHasher(nil)
		p, ok := x.ResultFingerprint(v, path)
		h, wantP, wantOK := x.ResultDigest(v, path)
		if ok != wantOK || p != wantP {
			t.Fatalf("path %q of %q: fingerprint alone %x %v, with digest %x %v", dotted, doc, p, ok, wantP, wantOK)
		}
		if ok && h == "" {
			t.Fatalf("path %q of %q: accepted without a digest", dotted, doc)
		}
		// The digest is of the canonical form, whether or not the document was rewritten.
		want, wantOK := CanonicalValuePath(v, path)
		if got, ok := x.PayloadDigest(v, path); ok != wantOK || ok && got != NewHasher(nil).sum(want) {
			t.Fatalf("path %q of %q: digest %s %v, of the canonical form %q %v", dotted, doc, got, ok, want, wantOK)
		}
	})
}

func TestIsCanonicalKnowsTheCommonCase(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"a":1,"b":[true,null,"x y"],"c":{"d":-2.5e3}}`: true,
		`[]`: true, `{}`: true, `[{"a":"b"},{}]`: true, `"s"`: true, `0`: true,
		`{"b":1,"a":2}`: false, `{"a":1,"a":2}`: false, `{"a": 1}`: false, ` {}`: false,
		`["\n"]`: false, `["é"]`: false, `{"a":1,}`: false, `[1]x`: false,
		`{"":1,"a":{"":2,"b":3}}`: true, `{"a":{"c":1},"b":{"a":2}}`: true, `{"b":{"c":1},"a":1}`: false,
	} {
		assert.Equal(t, want, isCanonical([]byte(doc)), doc)
	}
}

// FuzzIsCanonicalIsNeverWrong: a document isCanonical accepts is exactly its canonical
// form, so hashing it unrewritten gives the digest canonicalising would.
func FuzzIsCanonicalIsNeverWrong(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[2,{"c":"d"}]}`, `{"b":1,"a":2}`, `[1,2.50,-0,1e5]`, `{"a":{"b":{}},"b":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !isCanonical(doc) {
			return
		}
		got, err := canonicalAppend(nil, doc)
		if err != nil || !bytes.Equal(got, doc) {
			t.Fatalf("isCanonical(%q), but its canonical form is %q (%v)", doc, got, err)
		}
	})
}

// TestStringElementHoldingBrokenJSON: a string element that starts like JSON but is not
// is hashed as the string, also by a Hasher whose scratch space a failed attempt at the
// inner document once overwrote.
func TestStringElementHoldingBrokenJSON(t *testing.T) {
	x := NewHasher(nil)
	v := pcommon.NewValueStr(`{"result":"{\"a\":"}`)
	want := x.sum([]byte(`"{\"a\":"`))
	for range 3 {
		got, ok := x.PayloadDigest(v, []string{"result"})
		assert.True(t, ok)
		assert.Equal(t, want, got)
	}
}

// Unquote decodes as encoding/json does, and refuses what is not one whole string token.
func TestUnquoteDecodesAsEncodingJSON(t *testing.T) {
	for _, tok := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\ud83d\ude00"`, `"\ud800x"`, `"\udc00"`, "\"\xff\""} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		got, ok := Unquote(tok)
		// encoding/json turns invalid UTF-8 into U+FFFD; the canonicalizer keeps the bytes.
		if tok == "\"\xff\"" {
			want = "\xff"
		}
		if !ok || got != want {
			t.Errorf("Unquote(%s) = %q, %v; want %q", tok, got, ok, want)
		}
	}
	for _, tok := range []string{``, `"`, `"a`, `"a"b`, `"\x"`, "\"\x01\"", `"\u12"`, `a"`} {
		if got, ok := Unquote(tok); ok {
			t.Errorf("Unquote(%q) = %q, accepted", tok, got)
		}
	}
}
