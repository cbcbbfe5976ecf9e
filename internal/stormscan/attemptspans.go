package stormscan

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/attemptlog"
)

// attemptFields is the number of fields of a per-attempt attempt besides "event".
const attemptFields = 12

// attemptBatchSpans is how many per-attempt attempts go into one request to the processor.
const attemptBatchSpans = 1024

// attemptSpans turns per-attempt tool_attempt events into spans the processor recognises: one
// span per attempt, named after its tool, carrying every field of the line as an attribute
// of the same name (the processor's default attribute lists read run_id, span_id, attempt,
// tool_name, args_hash, idem_hash, status, token_in, token_out and side_effect), timed by
// t_start and t_end (unix milliseconds). The attempts of one run_id form one trace (its id
// a digest of the run id); they share a parent, the run, that no line describes, so a run
// is decided when the input ends, or under memory pressure, as a trace whose root never
// came.
type attemptSpans struct {
	td      ptrace.Traces
	spans   ptrace.SpanSlice
	ordinal uint64
}

func newAttemptSpans() *attemptSpans {
	s := &attemptSpans{}
	s.reset()
	return s
}

func (s *attemptSpans) reset() {
	s.td = ptrace.NewTraces()
	s.spans = s.td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
}

// len is the number of spans waiting in the current request.
func (s *attemptSpans) len() int { return s.spans.Len() }

// take returns the current request and starts the next.
func (s *attemptSpans) take() ptrace.Traces {
	td := s.td
	s.reset()
	return td
}

// add appends the span of one tool_attempt event.
func (s *attemptSpans) add(e attemptlog.Event) {
	s.ordinal++
	run := idText(e, "run_id")
	span := s.spans.AppendEmpty()
	span.SetTraceID(pcommon.TraceID(digest("run", run)))
	span.SetParentSpanID(spanID(digest("run span", run)))
	span.SetSpanID(spanID(digest("attempt", run+"\x00"+idText(e, "span_id")+"\x00"+strconv.FormatUint(s.ordinal, 10))))
	span.SetKind(ptrace.SpanKindInternal)
	name := "tool_attempt"
	if tool, ok := e.Get("tool_name"); ok {
		if t, isString := tool.(string); isString && t != "" {
			name = t
		}
	}
	span.SetName(name)
	start, startOK := millis(e, "t_start")
	end, endOK := millis(e, "t_end")
	if !endOK {
		end = start
	}
	if !startOK {
		start = end
	}
	span.SetStartTimestamp(start)
	span.SetEndTimestamp(end)
	attrs := span.Attributes()
	attrs.EnsureCapacity(attemptFields) // grown once, not field by field
	for key, value := range e.All() {
		if key == "event" {
			continue
		}
		putValue(attrs, key, value)
	}
}

// idText is the text a field's value is told apart by: a string as it is, anything else as
// JSON ("" when the field is missing).
func idText(e attemptlog.Event, key string) string {
	v, ok := e.Get(key)
	if !ok || v == nil {
		return ""
	}
	if str, isString := v.(string); isString {
		return str
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return "json:" + string(b)
}

// millis reads a field of unix milliseconds as a timestamp: a number, or a string holding
// one (the per-attempt scanner takes int() of either).
func millis(e attemptlog.Event, key string) (pcommon.Timestamp, bool) {
	v, ok := e.Get(key)
	if !ok {
		return 0, false
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		text = x
	default:
		return 0, false
	}
	ms, err := strconv.ParseFloat(text, 64)
	if err != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) || ms > math.MaxInt64/1e6 {
		return 0, false
	}
	return pcommon.Timestamp(int64(ms) * 1e6), true
}

// putValue stores a JSON value as an attribute: strings, integers, floats and booleans as
// themselves, arrays and objects as their JSON text; null is left out, as a missing field.
func putValue(attrs pcommon.Map, key string, v any) {
	switch x := v.(type) {
	case string:
		attrs.PutStr(key, x)
	case bool:
		attrs.PutBool(key, x)
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			attrs.PutInt(key, i)
		} else if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			attrs.PutDouble(key, f)
		} else {
			attrs.PutStr(key, string(x)) // NaN, Infinity, an integer beyond int64
		}
	case nil:
	default:
		if b, err := json.Marshal(x); err == nil {
			attrs.PutStr(key, string(b))
		}
	}
}

// digest derives trace and span ids. The "retrystorm seed " prefix is the ids' domain, kept
// from when the per-attempt format was called the seed format: changing it would change
// every id a scan writes for per-attempt input.
func digest(kind, text string) [16]byte {
	sum := sha256.Sum256([]byte("retrystorm seed " + kind + "\x00" + text))
	var id [16]byte
	copy(id[:], sum[:16])
	if id == ([16]byte{}) {
		binary.BigEndian.PutUint64(id[8:], 1) // an all-zero id is invalid
	}
	return id
}

func spanID(d [16]byte) pcommon.SpanID {
	var id pcommon.SpanID
	copy(id[:], d[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}
