package analysis

import (
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// SpanFindings is the finding record of the trace-level findings that concern one span,
// with that span, which carries the record when the trace is kept.
type SpanFindings struct {
	Span   ptrace.Span
	Record *stormrecord.FindingRecord
}

// findingRecords builds one record per span that trace-level findings (which belong to no
// call) concern, in the order of the findings.
func (an *Analyzer) findingRecords(t *grouping.Tree, traceID pcommon.TraceID, traceLevel []findings.Finding) []SpanFindings {
	var out []SpanFindings
	bySpan := map[ptrace.Span]*stormrecord.FindingRecord{}
	for _, f := range traceLevel {
		r, ok := bySpan[f.Span]
		if !ok {
			r = an.findingRecord(t, traceID, f.Span)
			bySpan[f.Span] = r
			out = append(out, SpanFindings{Span: f.Span, Record: r})
		}
		r.Findings = append(r.Findings, stormrecord.Finding{Kind: f.Kind, Detail: f.Detail})
	}
	return out
}

func (an *Analyzer) findingRecord(t *grouping.Tree, traceID pcommon.TraceID, span ptrace.Span) *stormrecord.FindingRecord {
	traceHex, spanHex := traceID.String(), span.SpanID().String()
	r := &stormrecord.FindingRecord{
		Schema:   stormrecord.FindingSchema,
		Revision: 1,
		ID:       stormrecord.FindingRecordID(traceHex, spanHex),
		Time:     spanTime(span),
		TraceID:  traceHex,
		SpanID:   spanHex,
		SpanName: span.Name(),
		Findings: []stormrecord.Finding{},
	}
	node := nodeOf(t, span)
	if node < 0 {
		return r
	}
	if svc, ok := t.Nodes[node].Resource.Attributes().Get("service.name"); ok && svc.Str() != "" {
		r.ServiceName = ptr(svc.Str())
	}
	// An answer span that does not carry the run id itself is the run's agent's, or under it.
	runID := an.x.RunID(span)
	if agent := t.Agent(node); runID == "" && agent >= 0 {
		runID = an.x.RunID(t.Nodes[agent].Span)
	}
	if runID != "" {
		r.RunID = ptr(runID)
	}
	return r
}

// nodeOf finds span's node. Trace-level findings are rare, so a walk is cheaper than
// keeping an index for every trace.
func nodeOf(t *grouping.Tree, span ptrace.Span) int32 {
	for i := range t.Nodes {
		if t.Nodes[i].Span == span {
			return int32(i)
		}
	}
	return -1
}

// spanTime is when the span ended (its start when it has no end), in UTC; a timestamp
// past what time.Time holds in int64 nanoseconds is clamped rather than wrapped.
func spanTime(span ptrace.Span) string {
	ts := max(span.EndTimestamp(), span.StartTimestamp())
	if uint64(ts) > math.MaxInt64 {
		ts = pcommon.Timestamp(math.MaxInt64)
	}
	return ts.AsTime().UTC().Format(time.RFC3339Nano)
}
