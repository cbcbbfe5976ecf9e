package attemptlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"unicode/utf8"
)

var (
	// ErrNotJSON marks a line that is not JSON. The script prints "skip line N: …" to stderr
	// for it and goes on, as a caller should.
	ErrNotJSON = errors.New("not JSON")
	// ErrScriptCrash marks a line on which the script would stop with a traceback and print
	// no report (see the package documentation for the list).
	ErrScriptCrash = errors.New("the per-attempt scanner script would crash on this line")
	// ErrTooDeep marks a line nested deeper than maxDepth arrays and objects.
	ErrTooDeep = errors.New("nested too deeply")
)

// maxDepth bounds nesting, counting the line's own object: CPython's recursion limit stops
// the script at about 990 levels, and 500 leaves room for printing nested values.
const maxDepth = 500

// maxIntDigits is CPython's default limit on the digits of an integer converted from text
// (sys.get_int_max_str_digits); json.loads raises ValueError above it.
const maxIntDigits = 4300

// Origin says where an event came from. The scanner keeps it only for attempts that Report
// may still have to drop, and names them with it in Report.Dropped.
type Origin struct {
	File string
	Line int64
}

// Event is one parsed JSONL line: a JSON object read as Python's json.loads reads it
// (NaN, Infinity and -Infinity accepted, the last of repeated keys wins, integers of any
// size).
type Event struct {
	// Origin is set by the caller when it wants Report.Dropped to name this event.
	Origin Origin
	fields *object
	// lone is set when a string holds a lone UTF-16 surrogate (from a \uD800-style
	// escape); those are kept as WTF-8 so that comparisons and output match Python.
	lone bool
}

// ParseLine parses one line as the script does after strip(). ok is false, with a nil
// error, for a line that is empty after stripping Python's whitespace (the script skips it
// without a message). The error wraps ErrNotJSON for text json.loads rejects, ErrTooDeep,
// or ErrScriptCrash for a line the script would crash on: invalid UTF-8, a JSON value that
// is not an object, an integer literal over 4300 digits.
func ParseLine(raw []byte) (e Event, ok bool, err error) {
	if !utf8.Valid(raw) {
		return Event{}, false, fmt.Errorf("%w: invalid UTF-8", ErrScriptCrash)
	}
	line := pyStrip(raw)
	if len(line) == 0 {
		return Event{}, false, nil
	}
	p := parser{buf: line}
	v, err := p.document()
	if err != nil {
		return Event{}, false, err
	}
	obj, isObject := v.(*object)
	if !isObject {
		return Event{}, false, fmt.Errorf("%w: the line is a JSON %s, not an object", ErrScriptCrash, pyTypeName(v))
	}
	return Event{fields: obj, lone: p.lone}, true, nil
}

// IsToolAttempt reports whether the event's "event" value is the string "tool_attempt".
func (e Event) IsToolAttempt() bool {
	v, _ := e.get("event")
	s, ok := v.(string)
	return ok && s == "tool_attempt"
}

// Get returns the value of key: a string, json.Number (the literal as written, also for
// NaN, Infinity and -Infinity), bool, nil, []any or map[string]any. A lone surrogate in a
// string becomes U+FFFD, as encoding/json does.
func (e Event) Get(key string) (any, bool) {
	v, ok := e.get(key)
	if !ok {
		return nil, false
	}
	return export(v, e.lone), true
}

// All yields the event's keys and values (as Get returns them) in the order Python's dict
// keeps them: first appearance of each key.
func (e Event) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		if e.fields == nil {
			return
		}
		for i, k := range e.fields.keys {
			if !yield(exportString(k, e.lone), export(e.fields.vals[i], e.lone)) {
				return
			}
		}
	}
}

func (e Event) get(key string) (any, bool) {
	if e.fields == nil {
		return nil, false
	}
	return e.fields.get(key)
}

func export(v any, lone bool) any {
	switch v := v.(type) {
	case string:
		return exportString(v, lone)
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = export(item, lone)
		}
		return out
	case *object:
		out := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			out[exportString(k, lone)] = export(v.vals[i], lone)
		}
		return out
	default:
		return v
	}
}

func exportString(s string, lone bool) string {
	if !lone || utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// SplitLines is a bufio.SplitFunc that splits as the script's stdin does on POSIX: at "\n"
// only (CPython opens stdin there with newline="\n", not universal newlines). A "\r"
// before the "\n" stays in the line, where ParseLine strips it as strip() does; a "\r"
// inside a line is JSON whitespace or makes the line invalid. Use it so that line numbers
// match the script's; give the bufio.Scanner a buffer as large as the longest line.
func SplitLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// pyStrip is str.strip(): it removes what str.isspace() calls whitespace from both ends of
// valid UTF-8.
func pyStrip(b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if !pyIsSpace(r) {
			break
		}
		b = b[size:]
	}
	for len(b) > 0 {
		r, size := utf8.DecodeLastRune(b)
		if !pyIsSpace(r) {
			break
		}
		b = b[:len(b)-size]
	}
	return b
}

// pyIsSpace is Python's str.isspace() for one character (bidirectional class WS, B or S,
// or category Zs); the set has not changed across the Unicode versions Python ships.
func pyIsSpace(r rune) bool {
	switch {
	case r <= 0x20:
		return r == ' ' || (r >= 0x09 && r <= 0x0d) || (r >= 0x1c && r <= 0x1f)
	case r < 0x85:
		return false
	}
	switch r {
	case 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func pyTypeName(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case json.Number:
		if isFloatLiteral(v) {
			return "float"
		}
		return "int"
	case bool:
		return "bool"
	case nil:
		return "null"
	case []any:
		return "list"
	default:
		return "object"
	}
}
