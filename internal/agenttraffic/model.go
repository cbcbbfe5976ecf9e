package agenttraffic

import (
	"encoding/hex"
	"encoding/json"
	"time"
)

// TraceID is a planned W3C trace id.
type TraceID [16]byte

// String returns the lowercase hex form used in ground truth and by backends.
func (id TraceID) String() string { return hex.EncodeToString(id[:]) }

// SpanID is a planned W3C span id; the zero value means "no parent".
type SpanID [8]byte

// String returns the lowercase hex form.
func (id SpanID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether the id is unset (a root span's parent).
func (id SpanID) IsZero() bool { return id == SpanID{} }

// SpanKind mirrors the OTLP span kinds the generator uses.
type SpanKind uint8

// Span kinds.
const (
	KindInternal SpanKind = iota
	KindClient
	KindServer
)

// StatusCode mirrors the OTLP span status codes.
type StatusCode uint8

// Status codes.
const (
	StatusUnset StatusCode = iota
	StatusOK
	StatusError
)

// Status is a span status.
type Status struct {
	Code    StatusCode
	Message string
}

// ValueKind tells which field of a Value is set.
type ValueKind uint8

// Value kinds: the attribute types real agent instrumentations send.
const (
	ValueString ValueKind = iota + 1
	ValueInt
	ValueFloat
	ValueBool
	ValueMap
	ValueStrings
)

// Value is a typed attribute value. Map entries keep their order so both emitters are
// deterministic.
type Value struct {
	Kind  ValueKind
	Str   string
	Int   int64
	Float float64
	Bool  bool
	Map   []Attr
	Strs  []string
}

// Attr is one attribute.
type Attr struct {
	Key   string
	Value Value
}

// Str, Int, Float, Bool, Strs and Map build attributes.
func Str(k, v string) Attr           { return Attr{k, Value{Kind: ValueString, Str: v}} }
func Int(k string, v int64) Attr     { return Attr{k, Value{Kind: ValueInt, Int: v}} }
func Float(k string, v float64) Attr { return Attr{k, Value{Kind: ValueFloat, Float: v}} }
func Bool(k string, v bool) Attr     { return Attr{k, Value{Kind: ValueBool, Bool: v}} }
func Strs(k string, v ...string) Attr {
	return Attr{k, Value{Kind: ValueStrings, Strs: append([]string(nil), v...)}}
}
func Map(k string, v []Attr) Attr { return Attr{k, Value{Kind: ValueMap, Map: v}} }

// Span is one planned span. Times are absolute, taken from the generator's base clock.
type Span struct {
	ID     SpanID
	Parent SpanID
	Name   string
	Kind   SpanKind
	Start  time.Time
	End    time.Time
	Status Status
	Attrs  []Attr
	Events []Event
}

// Event is one span event: Strands-style message events, an exception record.
type Event struct {
	Name  string
	Time  time.Time
	Attrs []Attr
}

// Attr returns the attribute with key k.
func (s *Span) Attr(k string) (Value, bool) {
	for _, a := range s.Attrs {
		if a.Key == k {
			return a.Value, true
		}
	}
	return Value{}, false
}

// Trace is one planned trace: its spans in parent-before-child order, the resource and
// instrumentation scope they are reported under, and the ground truth.
type Trace struct {
	ID      TraceID
	Service string
	Scope   string
	Spans   []Span
	Truth   Truth
}

// Root returns the trace's root span.
func (t *Trace) Root() *Span {
	for i := range t.Spans {
		if t.Spans[i].Parent.IsZero() {
			return &t.Spans[i]
		}
	}
	return nil
}

// Span returns the span with the given id.
func (t *Trace) Span(id SpanID) *Span {
	for i := range t.Spans {
		if t.Spans[i].ID == id {
			return &t.Spans[i]
		}
	}
	return nil
}

// JSON renders a value as JSON: how the SDK path carries maps, and how tests compare values.
func (v Value) JSON() string {
	b, err := json.Marshal(v.plain())
	if err != nil {
		// Values are built from strings, numbers and bools only; Marshal cannot fail on them.
		panic(err)
	}
	return string(b)
}

func (v Value) plain() any {
	switch v.Kind {
	case ValueString:
		return v.Str
	case ValueInt:
		return v.Int
	case ValueFloat:
		return v.Float
	case ValueBool:
		return v.Bool
	case ValueStrings:
		return v.Strs
	case ValueMap:
		m := make(map[string]any, len(v.Map))
		for _, a := range v.Map {
			m[a.Key] = a.Value.plain()
		}
		return m
	}
	return nil
}

// valueOf converts decoded JSON into a Value; arrays of non-strings become JSON strings
// because neither the model nor the SDK has a general array type.
func valueOf(x any) Value {
	switch t := x.(type) {
	case string:
		return Value{Kind: ValueString, Str: t}
	case bool:
		return Value{Kind: ValueBool, Bool: t}
	case int:
		return Value{Kind: ValueInt, Int: int64(t)}
	case int64:
		return Value{Kind: ValueInt, Int: t}
	case float64:
		if t == float64(int64(t)) {
			return Value{Kind: ValueInt, Int: int64(t)}
		}
		return Value{Kind: ValueFloat, Float: t}
	case map[string]any:
		return Value{Kind: ValueMap, Map: attrsOf(t)}
	case []string:
		return Value{Kind: ValueStrings, Strs: t}
	}
	b, _ := json.Marshal(x)
	return Value{Kind: ValueString, Str: string(b)}
}

// attrsOf converts a JSON object into attributes in sorted key order.
func attrsOf(m map[string]any) []Attr {
	keys := sortedKeys(m)
	out := make([]Attr, 0, len(keys))
	for _, k := range keys {
		out = append(out, Attr{Key: k, Value: valueOf(m[k])})
	}
	return out
}
