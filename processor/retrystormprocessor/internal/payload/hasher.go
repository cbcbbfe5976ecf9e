package payload

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"hash/maphash"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Hasher digests payloads: SHA-256 without a key, HMAC-SHA256 with one, because
// low-entropy arguments (account numbers) are brute-forceable from a plain hash.
// Its methods are the readings of an attempt's fields: digests (PayloadDigest of a field
// read at a path, TextDigest of a payload told as text, RawDigest of an opaque key),
// fingerprints that tell digests or results apart without computing them
// (DigestFingerprint, ResultFingerprint, ResultDigest), and what triage and redaction read
// of a field (StringField, EmptyField, CopiedText). A path inside a field is read by one
// walk for all of them (reader.go). A Hasher is not safe for concurrent use; make one per
// goroutine.
type Hasher struct {
	// mac is nil without a key: plain SHA-256 then runs on the stack.
	mac     hash.Hash
	c       canonicalizer
	scratch []byte
	digest  []byte
}

// NewHasher returns a Hasher; an empty key means plain SHA-256.
func NewHasher(key []byte) *Hasher {
	if len(key) == 0 {
		return &Hasher{}
	}
	return &Hasher{mac: hmac.New(sha256.New, key)}
}

// sum returns the lowercase hex digest of b.
func (x *Hasher) sum(b []byte) string {
	if x.mac == nil {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	x.mac.Reset()
	x.mac.Write(b)
	x.digest = x.mac.Sum(x.digest[:0])
	return hex.EncodeToString(x.digest)
}

// TextDigest is the digest of a payload recorded as the text s, as PayloadDigest digests a
// string attribute holding s read whole: a JSON object or array as its canonical JSON, a
// JSON string holding a document as that document, anything else as a JSON string. It is
// the hash a payload told by the model (a tool call's arguments) and a copy of a payload in
// messages carry.
func (x *Hasher) TextDigest(s string) string { return x.sum(x.canonicalText(s)) }

// canonicalText is the canonical JSON of a string attribute holding s, valid until the
// Hasher's next use: a JSON document already canonical where it stands in s, else written
// to the scratch space.
func (x *Hasher) canonicalText(s string) []byte {
	x.scratch = x.scratch[:0]
	if LooksLikeJSONContainer(s) {
		doc := stringBytes(s)
		if isCanonical(doc) {
			return doc
		}
		if out, err := x.c.appendCanonical(x.scratch, doc); err == nil {
			x.scratch = out
			return out
		}
	} else if doc, ok := x.encodedDocument(s); ok {
		x.scratch = doc
		return doc
	}
	x.scratch = appendString(x.scratch[:0], s)
	return x.scratch
}

// encodedDocument is the canonical JSON of the document s holds when s is a JSON string
// holding one, as OpenLLMetry records a tool's returned string (JSON.stringify): it is
// hashed as the document, as a string element holding one is (canonicalizer.element), so
// the tool span's hash is the one the markers of the returned string's copies in messages
// carry. A JSON string holding anything else is hashed as the text it is, quotes and all.
// The result is written to the scratch space.
func (x *Hasher) encodedDocument(s string) ([]byte, bool) {
	if !looksLikeJSONString(s) {
		return nil, false
	}
	out, ok := x.c.element(x.scratch[:0], stringBytes(s))
	if !ok || len(out) == 0 || out[0] == '"' {
		return nil, false
	}
	return out, true
}

// holdsEncodedDocument reports whether s is a JSON string holding a JSON document, which
// TextDigest hashes as that document.
func (x *Hasher) holdsEncodedDocument(s string) bool {
	doc, ok := x.encodedDocument(s)
	if ok {
		x.scratch = doc
	}
	return ok
}

// looksLikeJSONString reports whether s, white space aside, starts and ends with a quote.
func looksLikeJSONString(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"'
}

// RawDigest is the digest of s's bytes as given, not read as JSON: an idempotency key,
// which is opaque, or a number's literal in a message.
func (x *Hasher) RawDigest(s string) string {
	return x.sum([]byte(s))
}

// PayloadDigest is the digest of an attempt's payload field (its arguments or result)
// read from attribute v at path (nil: v whole): the canonical JSON of the element (see
// CanonicalValuePath), a string holding JSON read as that JSON. False when v has no
// element at path, so the field falls through to its next source.
func (x *Hasher) PayloadDigest(v pcommon.Value, path []string) (string, bool) {
	b, ok := x.canonicalPath(v, path)
	if !ok {
		return "", false
	}
	return x.sum(b), true
}

// canonicalPath returns the canonical JSON of the element at path inside v, valid until
// the Hasher's next use and only to be read: a JSON document, or an element of one, that
// is already canonical is returned where it stands, in v's string; anything else is
// written to the Hasher's scratch space.
func (x *Hasher) canonicalPath(v pcommon.Value, path []string) ([]byte, bool) {
	if v.Type() == pcommon.ValueTypeStr && len(path) == 0 {
		return x.canonicalText(v.Str()), true
	}
	x.scratch = x.scratch[:0]
	if v.Type() == pcommon.ValueTypeStr && LooksLikeJSONContainer(v.Str()) {
		elem, ok := rawElement(stringBytes(v.Str()), path)
		if !ok {
			return nil, false
		}
		// A string element is excluded: one holding JSON is hashed as that JSON.
		if elem[0] != '"' && isCanonical(elem) {
			return elem, true
		}
		b, ok := x.c.element(x.scratch, elem)
		x.scratch = b
		return b, ok
	}
	b, ok := x.c.valuePath(x.scratch, v, path)
	x.scratch = b
	return b, ok
}

// DigestFingerprint is the 64-bit fingerprint of the canonical JSON PayloadDigest digests,
// false where PayloadDigest is: two payloads get one fingerprint when they have one
// digest, and different fingerprints (but for a 2^-64 chance) when not. It tells
// attempts' payloads apart without hashing them.
func (x *Hasher) DigestFingerprint(v pcommon.Value, path []string) (uint64, bool) {
	b, ok := x.canonicalPath(v, path)
	if !ok {
		return 0, false
	}
	return maphash.Bytes(fingerprintSeed, b), true
}

// stringBytes views s as bytes without copying; the canonicalizer only reads its input.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// unsafeString views b as a string without copying, for reading while b is unchanged.
func unsafeString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// StringField is the string a field reads at path inside v (a tool name, a status, a
// hash or key given inside a document), decoded; false when the element is absent or not
// a string. A string holding a JSON document is that document, not a string, as
// PayloadDigest reads it.
func (x *Hasher) StringField(v pcommon.Value, path []string) (string, bool) {
	if len(path) > 0 && v.Type() == pcommon.ValueTypeStr {
		// In a JSON string document the element is decoded where it stands.
		if !LooksLikeJSONContainer(v.Str()) {
			return "", false
		}
		elem, ok := rawElement(stringBytes(v.Str()), path)
		if !ok || elem[0] != '"' {
			return "", false
		}
		return x.c.stringElement(elem)
	}
	b, ok := x.c.valuePath(x.scratch[:0], v, path)
	x.scratch = b
	if !ok || len(b) == 0 || b[0] != '"' {
		return "", false
	}
	return unquote(b)
}

// CopiedText reads the element at path inside v as PayloadDigest reads it and returns the
// text an SDK copies of it into messages, whose copies carry the element's digest: the
// element's string, decoded, when it is one, or the one string of a list of exactly one
// (OpenLLMetry records a LangChain tool's arguments as {"args":["<JSON>"]}); "" for
// anything else, and for a string that is a JSON string holding a document (the element's
// digest is the JSON string's, a copy's that of the document inside). listed reports the
// list: the element's digest is then not the text's own. present reports whether
// PayloadDigest finds the element at all, so a caller falls through to its next source
// exactly where the hash does.
func (x *Hasher) CopiedText(v pcommon.Value, path []string) (text string, listed, present bool) {
	text, listed, present = x.copiedText(v, path)
	if present && !listed && x.holdsEncodedDocument(text) {
		return "", false, true
	}
	return text, listed, present
}

// copiedText is CopiedText before a text holding an encoded document is set aside.
func (x *Hasher) copiedText(v pcommon.Value, path []string) (text string, listed, present bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if len(path) == 0 || !LooksLikeJSONContainer(v.Str()) {
			return "", false, false
		}
		elem, ok := rawElement(stringBytes(v.Str()), path)
		if !ok {
			return "", false, false
		}
		b, ok := x.c.element(x.scratch[:0], elem)
		x.scratch = b
		if !ok {
			return "", false, false
		}
		tok := elem
		if elem[0] == '[' {
			i := skipSpace(elem, 1)
			end, ok := 0, false
			if i < len(elem) && elem[i] == '"' {
				end, ok = skipString(elem, i)
			}
			if !ok || skipSpace(elem, end) != len(elem)-1 {
				return "", false, true // not a list of one string (elem ends with its ']')
			}
			tok, listed = elem[i:end], true
		}
		if tok[0] != '"' {
			return "", false, true
		}
		s, _ := Unquote(unsafeString(tok))
		return s, listed, true
	case pcommon.ValueTypeMap:
		cur, ok := mapElement(v, path)
		if !ok {
			return "", false, false
		}
		if cur.Type() == pcommon.ValueTypeSlice && cur.Slice().Len() == 1 {
			cur, listed = cur.Slice().At(0), true
		}
		if cur.Type() == pcommon.ValueTypeStr {
			return cur.Str(), listed, true
		}
		return "", false, true
	}
	return "", false, false
}

// fingerprintSeed seeds the fingerprints. They live only in this process's memory, so a
// seed per process is enough.
var fingerprintSeed = maphash.MakeSeed()

// TextFingerprint is the 64-bit fingerprint of the text s: ResultFingerprint of a string
// attribute holding s read whole, and of a result hash given as s.
func TextFingerprint(s string) uint64 { return maphash.String(fingerprintSeed, s) }

// ResultDigest is PayloadDigest of a result source with the fingerprint the stale-cache
// memory tells results apart by (ResultFingerprint).
func (x *Hasher) ResultDigest(v pcommon.Value, path []string) (digest string, fingerprint uint64, ok bool) {
	return x.resultReading(v, path, true)
}

// ResultFingerprint is the 64-bit fingerprint the stale-cache memory tells results apart
// by, of the payload as sent: of a string attribute, the string, or the element at path as
// it stands in the string; of a map, or an element inside one, its canonical JSON. It is
// false exactly where PayloadDigest is, but computes no digest, and a string read whole is
// not even parsed.
func (x *Hasher) ResultFingerprint(v pcommon.Value, path []string) (uint64, bool) {
	_, p, ok := x.resultReading(v, path, false)
	return p, ok
}

// resultReading is ResultDigest, without the digest (then "-") when digest is false.
func (x *Hasher) resultReading(v pcommon.Value, path []string, digest bool) (string, uint64, bool) {
	if len(path) == 0 && v.Type() == pcommon.ValueTypeStr {
		p := maphash.String(fingerprintSeed, v.Str())
		if !digest {
			return "-", p, true
		}
		h, _ := x.PayloadDigest(v, path)
		return h, p, true
	}
	if v.Type() == pcommon.ValueTypeStr && LooksLikeJSONContainer(v.Str()) {
		// An element of a JSON string document: fingerprinted as sent too.
		elem, ok := rawElement(stringBytes(v.Str()), path)
		if !ok {
			return "", 0, false
		}
		p := maphash.Bytes(fingerprintSeed, elem)
		// An element PayloadDigest rejects (invalid JSON) is rejected here too, or the two
		// paths would take different sources; without the digest it is only validated.
		if !digest {
			if !validJSON(elem) {
				return "", 0, false
			}
			return "-", p, true
		}
		b, ok := x.canonicalPath(v, path)
		if !ok {
			return "", 0, false
		}
		return x.sum(b), p, true
	}
	b, ok := x.canonicalPath(v, path)
	if !ok {
		return "", 0, false
	}
	p := maphash.Bytes(fingerprintSeed, b)
	if !digest {
		return "-", p, true
	}
	return x.sum(b), p, true
}
