// Package stormrecord defines the storm summary record and the span attributes that carry it
// from the retry_storm processor to the storm_summary exporter and the stormreport tool.
package stormrecord // import "github.com/retrystorm/retrystorm/internal/stormrecord"

import (
	"crypto/sha256"
	"encoding/hex"
)

// Schema is the value of the record's "schema" field.
const Schema = "retrystorm.storm/v1"

// Attribute keys the processor writes on kept spans (processor README, "Annotations on kept
// spans").
const (
	AttrCallKey      = "retrystorm.call.key"
	AttrCallAttempt  = "retrystorm.call.attempt"
	AttrCallAttempts = "retrystorm.call.attempts"
	AttrCallLayer    = "retrystorm.call.layer"
	AttrCallStorm    = "retrystorm.call.storm"
	AttrCallClass    = "retrystorm.call.class"
	// AttrCallTool is the call's tool name as its record spells it (the last attempt's), on
	// every attempt, so a reader counts calls per tool without a record (clean calls have
	// none).
	AttrCallTool   = "retrystorm.call.tool"
	AttrStatus     = "retrystorm.status"
	AttrArgsHash   = "retrystorm.args.hash"
	AttrResultHash = "retrystorm.result.hash"
	AttrIdemHash   = "retrystorm.idem.hash"
	// AttrFollowed lists what following the model supplied of an attempt
	// (FollowedFields): the span itself did not say it.
	AttrFollowed     = "retrystorm.call.followed"
	AttrStatusRemap  = "retrystorm.status.remapped"
	AttrTraceStorms  = "retrystorm.trace.storms"
	AttrTraceFinding = "retrystorm.trace.findings"
	// AttrTraceUnseen counts the trace's tool calls retry_storm could not see (a model's
	// request no span answered, an attempt whose arguments or result nothing gave);
	// written when not zero.
	AttrTraceUnseen = "retrystorm.trace.unseen_tool_calls"
	AttrSampling    = "retrystorm.sampling.reason"
	// AttrCallSummary holds the JSON-encoded Record of a logical call (or agent-level
	// chain) on its last attempt, so the exporter needs no second analysis. It is written
	// for every call that is a storm, ended in failure, or carries findings.
	AttrCallSummary = "retrystorm.call.summary"

	// FindingEvent is the span event name of a finding; its attributes are
	// FindingKind, FindingDetail and FindingCallKey.
	FindingEvent   = "retrystorm.finding"
	FindingKind    = "kind"
	FindingDetail  = "detail"
	FindingCallKey = "call.key"

	// LateFindingSpan is the name of the span that carries a finding found after its trace
	// was forwarded, with the next revision of the call's record.
	LateFindingSpan = "retrystorm.late_finding"
)

// Layers counts the tries made at each retry layer: transport (wire sends observed under
// the attempts; 0 when no HTTP client spans were recorded), executor (tool attempts) and
// agent (logical calls in an agent-level chain; 1 for a single call).
type Layers struct {
	Transport int `json:"transport"`
	Executor  int `json:"executor"`
	Agent     int `json:"agent"`
}

// Finding is one divergence between what the trace claims and what ran.
type Finding struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// Record is one storm summary record (storm_summary README, "The record"). Pointer fields
// are null in JSON when the trace does not tell them; they are never fabricated.
type Record struct {
	Schema             string    `json:"schema"`
	ID                 string    `json:"id"`
	Time               string    `json:"time"`
	TraceID            string    `json:"trace_id"`
	RunID              *string   `json:"run_id"`
	ServiceName        *string   `json:"service_name"`
	CallKey            string    `json:"call_key"`
	ToolName           string    `json:"tool_name"`
	Storm              bool      `json:"storm"`
	Layer              Layer     `json:"layer"`
	Layers             Layers    `json:"layers"`
	Attempts           int       `json:"attempts"`
	Statuses           []string  `json:"statuses"`
	UniqueArgs         int       `json:"unique_args"`
	UniqueResults      int       `json:"unique_results"`
	MS                 int64     `json:"ms"`
	IdemHash           *string   `json:"idem_hash"`
	TokensIn           *int64    `json:"tokens_in"`
	TokensOut          *int64    `json:"tokens_out"`
	FailedTokensIn     *int64    `json:"failed_tokens_in"`
	FailedTokensOut    *int64    `json:"failed_tokens_out"`
	SideEffects        []string  `json:"side_effects"`
	Class              *string   `json:"class"`
	StatusFlip         bool      `json:"status_flip"`
	Findings           []Finding `json:"findings"`
	IncompleteAttempts int       `json:"incomplete_attempts"`
	AttemptSpanIDs     []string  `json:"attempt_span_ids"`
	// Timeline holds one entry per attempt in attempt order so stormreport can draw the
	// storm on a time axis; absent when the processor did not fill it.
	Timeline []AttemptTime `json:"timeline,omitempty"`
	TraceURL *string       `json:"trace_url,omitempty"`
	// Partial marks a record of the rest of a trace decided provisionally (under memory
	// pressure, or past max_trace_bytes): the spans that came before that decision were
	// dropped, so the record covers part of the trace and its counts only what the rest
	// holds. Absent when the record covers the whole trace.
	Partial bool `json:"partial,omitempty"`
	// Revision numbers the versions of this record one collector wrote: 1 when the call's
	// trace was decided, one more for each finding about it found after the trace was
	// forwarded (stale_cache_suspect). Readers take, per id, the most complete record
	// (Completeness).
	Revision int `json:"revision"`
}

// AttemptTime places one attempt of a call on the call's time axis: its start relative to
// the first attempt's start, its duration, normalised status, layer and attempt number.
type AttemptTime struct {
	StartMSOffset int64  `json:"start_ms_offset"`
	DurationMS    int64  `json:"duration_ms"`
	Status        string `json:"status"`
	Layer         Layer  `json:"layer"`
	Attempt       int    `json:"attempt"`
}

// Layer names who made attempts of a call: the HTTP client, the tool executor, the agent
// (its model calling the tool again), as records, annotations and telemetry spell it.
type Layer string

// Layer names. LayerNone marks a call no layer retried (a single-attempt failure record);
// LayerInitial is the first attempt of a call on a timeline.
const (
	LayerTransport Layer = "transport"
	LayerExecutor  Layer = "executor"
	LayerAgent     Layer = "agent"
	LayerNone      Layer = "none"
	LayerInitial   Layer = "initial"
)

// Failed reports whether the call's last attempt did not succeed.
func (r *Record) Failed() bool {
	return len(r.Statuses) > 0 && r.Statuses[len(r.Statuses)-1] != "ok"
}

// RecordID derives the stable record id from the trace id and the call key, so a
// re-export of the same trace yields the same id.
func RecordID(traceID, callKey string) string {
	sum := sha256.Sum256([]byte(traceID + "\x00" + callKey))
	return hex.EncodeToString(sum[:16])
}
