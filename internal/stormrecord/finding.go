package stormrecord

import (
	"crypto/sha256"
	"encoding/hex"
)

// FindingSchema is the "schema" of a finding record. A record of its own rather than a
// storm record with the call fields empty: a trace-level finding has no call, so
// attempts, statuses, layers and tool would be made-up zeros, and every reader of the
// storm schema (which counts each record as a call) would count it as one.
const FindingSchema = "retrystorm.finding/v1"

// AttrFindingSummary holds the JSON-encoded FindingRecord of the trace-level findings on
// the span they concern (for unbacked_citation, the answer span), so the exporter needs
// no second analysis.
const AttrFindingSummary = "retrystorm.finding.summary"

// FindingRecord is the record of the trace-level findings of one span: findings that
// belong to no call (unbacked_citation). Pointer fields are null when the trace does not
// tell them.
type FindingRecord struct {
	Schema      string  `json:"schema"`
	ID          string  `json:"id"`
	Time        string  `json:"time"`
	TraceID     string  `json:"trace_id"`
	RunID       *string `json:"run_id"`
	ServiceName *string `json:"service_name"`
	// SpanID and SpanName name the span the findings concern.
	SpanID   string    `json:"span_id"`
	SpanName string    `json:"span_name"`
	Findings []Finding `json:"findings"`
	TraceURL *string   `json:"trace_url,omitempty"`
	// Partial marks a record of the rest of a provisionally decided trace, as
	// Record.Partial does: an asset the answer cites may have been read in the part dropped.
	Partial bool `json:"partial,omitempty"`
	// Revision is 1: trace-level findings are all found when the trace is decided. It is
	// here so both records are ordered alike (Completeness).
	Revision int `json:"revision"`
}

// FindingRecordID derives the stable id of a finding record from the trace id and the id
// of the span it concerns. The input is kept apart from RecordID's, whose call keys can be
// span ids too, so a finding record never takes a call record's id.
func FindingRecordID(traceID, spanID string) string {
	sum := sha256.Sum256([]byte("finding\x00" + traceID + "\x00" + spanID))
	return hex.EncodeToString(sum[:16])
}
