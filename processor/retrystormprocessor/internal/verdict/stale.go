package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// A stale read decided before the trace it copied is found when that trace's results are
// remembered, by whichever shard decides it: the suspect was held in the shared memory
// with a heldReport, and that shard sends the finding on a span of its own
// (lateFindingSpan) carrying the next revision of the call's record.

// lateFindingSpan names the span that carries a finding found after its trace was decided.
const lateFindingSpan = stormrecord.LateFindingSpan

// heldReport is what reporting a held suspect takes once the trace it copied is decided.
// It references nothing of the trace's spans, which have been forwarded by then.
type heldReport struct {
	suspect findings.Suspect // its Span is cleared
	trace   pcommon.TraceID
	attempt pcommon.SpanID
	end     pcommon.Timestamp
	kept    bool
	stamp   bool
	th      sampling.Threshold
	call    *revisedRecord // nil when the trace was dropped
}

// revisedRecord is the record of a call whose suspects are held: each finding found later
// makes the next revision, holding every finding so far. A call's suspects can be
// resolved on two shards at once, hence the lock (held only to append and encode).
type revisedRecord struct {
	mu     sync.Mutex
	record stormrecord.Record
}

func (r *revisedRecord) revise(f stormrecord.Finding) ([]byte, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record.Findings = append(r.record.Findings, f)
	r.record.Revision++
	b, err := json.Marshal(&r.record)
	return b, r.record.Revision, err
}

// holdSuspects holds the trace's stale-cache suspects once it is decided (and, kept, its
// records annotated and scrubbed): a result remembered later resolves them. d is the
// decision. A suspect a result remembered since the analysis already resolves is reported
// at once, as one resolved later is.
func (v *Verdict) holdSuspects(tr *analysis.Trace, d sample.Decision) {
	if v.shared.Held == nil || len(tr.Suspects) == 0 {
		return
	}
	calls := map[*stormrecord.Record]*revisedRecord{}
	for i := range tr.Suspects {
		sus := &tr.Suspects[i]
		r := &heldReport{
			suspect: sus.Suspect, trace: tr.TraceID, attempt: sus.Span.SpanID(), end: sus.Span.EndTimestamp(),
			kept: d.Keep, stamp: d.Stamp, th: d.Threshold,
		}
		r.suspect.Span = ptrace.Span{}
		if d.Keep {
			if r.call = calls[sus.Record]; r.call == nil {
				r.call = &revisedRecord{record: copyRecord(sus.Record)}
				calls[sus.Record] = r.call
			}
		}
		h := v.shared.Held.Hold(stalecache.Suspect{Fingerprint: sus.Fingerprint, Start: sus.Start, Trace: tr.TraceID, Report: r})
		v.shared.Tel.suspects(metadata.AttributeSuspectOutcomeExpired, h.Expired)
		v.shared.Tel.suspects(metadata.AttributeSuspectOutcomeEvicted, h.Evicted)
		if h.Held {
			v.shared.Tel.suspects(metadata.AttributeSuspectOutcomeHeld, 1)
		}
		if h.Matched {
			v.reportResolved([]stalecache.Match{h.Match})
		}
	}
}

// copyRecord copies what a revision changes, so the held record shares no list with the
// one annotated on the forwarded span.
func copyRecord(r *stormrecord.Record) stormrecord.Record {
	c := *r
	c.Findings = append([]stormrecord.Finding(nil), r.Findings...)
	return c
}

// reportResolved reports the findings about traces decided before, resolved by results
// just remembered: on a late-finding span for a kept trace, as a known miss for a dropped
// one.
func (v *Verdict) reportResolved(matches []stalecache.Match) {
	for _, m := range matches {
		r, ok := m.Suspect.Report.(*heldReport)
		if !ok {
			continue
		}
		v.shared.Tel.suspects(metadata.AttributeSuspectOutcomeResolved, 1)
		v.shared.Tel.finding(findings.StaleCacheSuspect)
		if !r.kept {
			v.shared.Tel.lateFindings(metadata.AttributeLateFindingOutcomeTraceDropped, 1)
			continue
		}
		f := stormrecord.Finding{Kind: findings.StaleCacheSuspect, Detail: r.suspect.Detail(m.First, m.FirstTrace)}
		b, revision, err := r.call.revise(f)
		if err != nil {
			v.shared.Logger.Debug("encode a revised call record", zap.Error(err))
			v.shared.Tel.lateFindings(metadata.AttributeLateFindingOutcomeNextConsumerError, 1)
			continue
		}
		v.late.add(r, f, string(b), revision)
	}
}

// lateBatch is a shard's outgoing late-finding spans. They are not the trace's spans: they
// count in late_findings, not in spans_forwarded.
type lateBatch struct {
	td    ptrace.Traces
	spans int64
}

func (lb *lateBatch) add(r *heldReport, f stormrecord.Finding, summary string, revision int) {
	if lb.spans == 0 {
		lb.td = ptrace.NewTraces()
	}
	rs := lb.td.ResourceSpans().AppendEmpty()
	if svc := r.call.record.ServiceName; svc != nil {
		rs.Resource().Attributes().PutStr("service.name", *svc)
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(metadata.ScopeName)
	span := ss.Spans().AppendEmpty()
	span.SetTraceID(r.trace)
	span.SetSpanID(lateSpanID(r.trace, r.attempt, revision))
	span.SetParentSpanID(r.attempt)
	span.SetName(lateFindingSpan)
	span.SetStartTimestamp(r.end)
	span.SetEndTimestamp(r.end)
	if r.stamp {
		if ts, err := sample.Stamp("", r.th); err == nil {
			span.TraceState().FromRaw(ts)
		}
	}
	attrs := span.Attributes()
	attrs.PutStr(stormrecord.AttrCallKey, r.suspect.CallKey)
	attrs.PutStr(stormrecord.AttrCallSummary, summary)
	ev := span.Events().AppendEmpty()
	ev.SetName(stormrecord.FindingEvent)
	ev.SetTimestamp(r.end)
	ev.Attributes().PutStr(stormrecord.FindingKind, f.Kind)
	ev.Attributes().PutStr(stormrecord.FindingDetail, f.Detail)
	ev.Attributes().PutStr(stormrecord.FindingCallKey, r.suspect.CallKey)
	lb.spans++
}

// lateSpanID derives the late-finding span's id from the attempt it concerns and the
// revision it carries, so the same finding sent again has the same span.
func lateSpanID(trace pcommon.TraceID, attempt pcommon.SpanID, revision int) pcommon.SpanID {
	sum := sha256.Sum256(append(append([]byte("late_finding\x00"), trace[:]...), append(attempt[:], byte(revision), byte(revision>>8))...))
	var id pcommon.SpanID
	copy(id[:], sum[:8])
	return id
}

// expireEvery bounds how often a shard lets expired suspects go: each pass takes the
// memory's 16 locks.
const expireEvery = time.Second

// ExpireSuspects reports the suspects resolved by traces another verdict assessed, and lets
// go of the held suspects whose recheck window has passed and counts them, at most once a
// second per shard.
func (v *Verdict) ExpireSuspects(now time.Time) {
	if v.shared.Held == nil {
		return
	}
	// Suspects a sampling policy sharing the memory resolved, reported by the first shard
	// to look.
	v.reportResolved(v.shared.Held.TakeUnclaimed())
	if now.Sub(v.lastExpire) < expireEvery {
		return
	}
	v.lastExpire = now
	v.shared.Tel.suspects(metadata.AttributeSuspectOutcomeExpired, v.shared.Held.Expire())
}

// FlushLate forwards the shard's late-finding spans to next.
func (v *Verdict) FlushLate(ctx context.Context, next consumer.Traces) {
	if v.late.spans == 0 {
		return
	}
	td, n := v.late.td, v.late.spans
	v.late = lateBatch{}
	for _, rs := range td.ResourceSpans().All() {
		v.sealer.Seal(rs.ScopeSpans().At(0).Spans().At(0))
	}
	if ctx.Err() != nil {
		v.shared.Tel.lateFindings(metadata.AttributeLateFindingOutcomeShutdown, n)
		return
	}
	if err := next.ConsumeTraces(ctx, td); err != nil {
		outcome := metadata.AttributeLateFindingOutcomeNextConsumerError
		if ctx.Err() != nil {
			outcome = metadata.AttributeLateFindingOutcomeShutdown
		}
		v.shared.Tel.lateFindings(outcome, n)
		v.shared.Logger.Debug("next consumer refused late findings", zap.Int64("findings", n), zap.Error(err))
		return
	}
	v.shared.Tel.lateFindings(metadata.AttributeLateFindingOutcomeForwarded, n)
}
