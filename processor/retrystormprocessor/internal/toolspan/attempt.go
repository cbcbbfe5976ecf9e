package toolspan

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

// Field names one attempt field, for completeness checks.
type Field uint16

const (
	FieldRunID Field = 1 << iota
	FieldCallID
	FieldAttempt
	FieldToolName
	FieldArgsHash
	FieldResultHash
	FieldIdemHash
	FieldStatus
	FieldTokensIn
	FieldTokensOut
	FieldStart
	FieldEnd
	FieldSideEffect
)

// FieldNames maps the names used in `completeness.required` to fields.
var FieldNames = map[string]Field{
	"run_id":      FieldRunID,
	"call_id":     FieldCallID,
	"span_id":     FieldCallID,
	"attempt":     FieldAttempt,
	"tool_name":   FieldToolName,
	"args_hash":   FieldArgsHash,
	"result_hash": FieldResultHash,
	"idem_hash":   FieldIdemHash,
	"status":      FieldStatus,
	"tokens_in":   FieldTokensIn,
	"token_in":    FieldTokensIn,
	"tokens_out":  FieldTokensOut,
	"token_out":   FieldTokensOut,
	"t_start":     FieldStart,
	"t_end":       FieldEnd,
	"side_effect": FieldSideEffect,
}

// AttemptNumber is an explicit attempt number as the span carried it.
type AttemptNumber struct {
	Value int64
	// Set is true when an attempt attribute was present; Invalid when its value was not a
	// positive integer (then Value is 0 and start order numbers the attempt).
	Set     bool
	Invalid bool
}

// Attempt is one try of a tool call: one span, with its fields read and normalised.
type Attempt struct {
	Span     ptrace.Span
	Resource pcommon.Resource
	SpanID   pcommon.SpanID
	ParentID pcommon.SpanID
	Start    pcommon.Timestamp
	End      pcommon.Timestamp

	ToolName string
	CallID   string
	Number   AttemptNumber

	ArgsHash   string
	ResultHash string
	// ResultFingerprint is a 64-bit fingerprint of the result for the in-memory stale-cache
	// lookups, set with ResultHash: of a JSON string payload the string (or the key#path
	// element) as sent, of a map its canonical JSON, of a given hash that hash.
	ResultFingerprint uint64
	IdemHash          string
	RunID             string
	TokensIn          int64
	TokensOut         int64
	SideEffect        string
	ReadAsset         string

	Status outcome.Status
	// ExplicitStatus is true when the instrumentation's own outcome field was present.
	ExplicitStatus bool
	Remap          *outcome.Remap
	// Present is the set of fields the span carried.
	Present Field
	// Clamped holds FieldStart and/or FieldEnd when that timestamp was past MaxTimestamp.
	Clamped Field
	// RedactKeys are the raw payload attributes present on the span.
	RedactKeys []string
	// Told holds the fields following the model supplied (the span did not carry them),
	// and Followed says no recognition rule named the span: following found it.
	Told     Field
	Followed bool
}

// FollowedFields names what following the model supplied of a: "span" when it found the
// span itself, then the fields in Told, for retrystorm.call.followed.
func (a *Attempt) FollowedFields() []string {
	var out []string
	if a.Followed {
		out = append(out, "span")
	}
	for _, f := range []struct {
		field Field
		name  string
	}{{FieldCallID, "call_id"}, {FieldToolName, "tool_name"}, {FieldArgsHash, "arguments"}, {FieldResultHash, "result"}, {FieldStatus, "status"}} {
		if a.Told&f.field != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// Has reports whether the span carried field f.
func (a *Attempt) Has(f Field) bool { return a.Present&f != 0 }

// MaxTimestamp is the latest span time the analysis works with: math.MaxInt64 ns after
// the epoch (2262-04-11T23:47:16.854775807Z), the last instant both time.Time from
// AsTime and int64 nanoseconds represent. A span time past it (OTLP allows up to 2^64−1)
// is clamped to it, so no record time wraps into 1969 and no duration or age goes negative.
const MaxTimestamp = pcommon.Timestamp(math.MaxInt64)

// ClampTimestamp returns ts, or MaxTimestamp and true when ts is later.
func ClampTimestamp(ts pcommon.Timestamp) (pcommon.Timestamp, bool) {
	if ts > MaxTimestamp {
		return MaxTimestamp, true
	}
	return ts, false
}

// setTimes reads the span's start and end, clamped to MaxTimestamp, into a.
func (a *Attempt) setTimes(span ptrace.Span) {
	var clamped bool
	if a.Start, clamped = ClampTimestamp(span.StartTimestamp()); clamped {
		a.Clamped |= FieldStart
	}
	if a.End, clamped = ClampTimestamp(span.EndTimestamp()); clamped {
		a.Clamped |= FieldEnd
	}
	if a.Start != 0 {
		a.Present |= FieldStart
	}
	if a.End != 0 {
		a.Present |= FieldEnd
	}
}

// DurationNanos is the attempt's duration, 0 when it did not end after it started.
func (a *Attempt) DurationNanos() int64 {
	if a.End <= a.Start {
		return 0
	}
	return int64(a.End - a.Start)
}

// Send is a transport-layer try: an HTTP client span under an attempt.
type Send struct {
	Span   ptrace.Span
	Number int64
	Status outcome.Status
}
