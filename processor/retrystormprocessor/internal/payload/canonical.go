// Package payload turns tool arguments, results and idempotency keys into joinable digests:
// canonical JSON, then SHA-256 or, with a key, HMAC-SHA256.
package payload // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxDepth bounds nesting so hostile payloads cannot exhaust the stack.
const maxDepth = 64

var errTooDeep = errors.New("json nested deeper than 64 levels")

// CanonicalJSON re-encodes a JSON document the way Python's
// json.dumps(v, sort_keys=True, separators=(",", ":")) does: object keys sorted, no
// insignificant whitespace, non-ASCII escaped as \uXXXX, number literals kept as written.
// It fails on invalid or trailing input.
func CanonicalJSON(doc []byte) ([]byte, error) {
	out, err := canonicalAppend(make([]byte, 0, len(doc)), doc)
	if err != nil {
		return nil, fmt.Errorf("parse json: %w", err)
	}
	return out, nil
}

// canonicalViaDecoder is the reference implementation over encoding/json, kept for the
// element paths and to check the one-pass canonicalizer against.
func canonicalViaDecoder(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parse json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("parse json: trailing data after document")
	}
	var buf bytes.Buffer
	buf.Grow(len(doc))
	if err := writeCanonical(&buf, v, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CanonicalValue encodes a pdata attribute value as canonical JSON. A string holding a
// JSON object or array is parsed first, so a JSON-string payload and the same payload sent
// as a map hash alike; any other string is encoded as a JSON string.
func CanonicalValue(v pcommon.Value) []byte {
	var buf bytes.Buffer
	if v.Type() == pcommon.ValueTypeStr {
		s := v.Str()
		if LooksLikeJSONContainer(s) {
			if out, err := canonicalAppend(make([]byte, 0, len(s)), []byte(s)); err == nil {
				return out
			}
		}
		return appendString(make([]byte, 0, len(s)+2), s)
	}
	writeValue(&buf, v, 0)
	return buf.Bytes()
}

// LooksLikeJSONContainer reports whether s starts, after white space, like a JSON object
// or array.
func LooksLikeJSONContainer(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		default:
			return false
		}
	}
	return false
}

func writeCanonical(buf *bytes.Buffer, v any, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case json.Number:
		buf.WriteString(t.String())
	case string:
		writeString(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, t[k], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	}
	return nil
}

func writeValue(buf *bytes.Buffer, v pcommon.Value, depth int) {
	if depth > maxDepth {
		buf.WriteString("null")
		return
	}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		writeString(buf, v.Str())
	case pcommon.ValueTypeBool:
		buf.WriteString(strconv.FormatBool(v.Bool()))
	case pcommon.ValueTypeInt:
		buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case pcommon.ValueTypeDouble:
		writeFloat(buf, v.Double())
	case pcommon.ValueTypeBytes:
		writeString(buf, string(v.Bytes().AsRaw()))
	case pcommon.ValueTypeSlice:
		buf.WriteByte('[')
		for i := 0; i < v.Slice().Len(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeValue(buf, v.Slice().At(i), depth+1)
		}
		buf.WriteByte(']')
	case pcommon.ValueTypeMap:
		m := v.Map()
		keys := make([]string, 0, m.Len())
		for k := range m.All() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			e, _ := m.Get(k)
			writeValue(buf, e, depth+1)
		}
		buf.WriteByte('}')
	default:
		buf.WriteString("null")
	}
}

// writeFloat follows Python's float repr for the common cases (1.0, 0.5, 1e+20) and
// writes null for NaN and infinities, which JSON cannot carry.
func writeFloat(buf *bytes.Buffer, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		buf.WriteString("null")
		return
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		buf.WriteString(strconv.FormatFloat(f, 'f', 1, 64))
		return
	}
	buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
}

const hexDigits = "0123456789abcdef"

// writeString escapes like Python's json.dumps with ensure_ascii=True.
func writeString(buf *bytes.Buffer, s string) {
	buf.Write(appendString(buf.AvailableBuffer(), s))
}

// appendString appends s as a JSON string escaped like Python's json.dumps with
// ensure_ascii=True. Invalid UTF-8 bytes become U+FFFD so the digest is defined for any
// input.
func appendString[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		// Copy a run of bytes that need no escaping at once.
		j := plainEnd(s, i)
		if j > i {
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		var r rune
		var size int
		switch v := any(s).(type) {
		case string:
			r, size = utf8.DecodeRuneInString(v[i:])
		case []byte:
			r, size = utf8.DecodeRune(v[i:])
		}
		i += size
		dst = appendRune(dst, r)
	}
	return append(dst, '"')
}

func appendRune(dst []byte, r rune) []byte {
	switch {
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r < 0x20 || (r > 0x7f && r < 0x10000):
		return appendU4(dst, r)
	case r >= 0x10000:
		hi, lo := utf16.EncodeRune(r)
		return appendU4(appendU4(dst, hi), lo)
	}
	return append(dst, byte(r))
}

func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[(r>>12)&0xf], hexDigits[(r>>8)&0xf], hexDigits[(r>>4)&0xf], hexDigits[r&0xf])
}
