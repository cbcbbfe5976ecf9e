// Package held is the contract between the store (package buffer), which holds traces
// until they are due, and the verdict (package verdict), which decides them: what a shard
// asks of its verdict, the trace as the verdict reads it at its decision, what the verdict
// decided, and what the rest of a provisionally decided trace knows of its first part.
// Neither package imports the other; the processor puts them together.
package held // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/held"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// Trace is a trace the store holds, as the verdict reads it. Set points into the store's
// record of it, which Unpack may change.
type Trace[K any] struct {
	ID  pcommon.TraceID
	Set *spanset.Set
	// Triaged: the trace needs no triage at its decision (triaged on its root's arrival,
	// or set aside under memory pressure for a signal: triage only proves traces clean).
	Triaged bool
	// ErrorSeen: a span in status ERROR arrived.
	ErrorSeen bool
	// Fragment: its root has not arrived.
	Fragment bool
	// Rest is set for the rest of a provisionally decided trace.
	Rest *Rest[K]
	// Unpack decodes the spans the store holds packed into Set, noted again.
	Unpack func()
}

// Rest is what the rest of a provisionally decided trace knows of that decision.
type Rest[K any] struct {
	// Cause names why the first decision was provisional (the cause attribute of
	// late_signals: memory_pressure, trace_bytes).
	Cause string
	// Kept is what the verdict remembered of the first part when it was kept (its rest is
	// kept too), nil when it was dropped.
	Kept *K
}

// Outcome is the verdict on a trace.
type Outcome[K any] struct {
	Keep bool
	// Reason is the sampling reason (the reason attribute of the traces metric).
	Reason string
	// Kept is what late spans of a kept trace need.
	Kept K
	// Held are copies of the spans of calls held back for the rest of a kept provisional
	// part, nil when none are: they begin the rest of the trace.
	Held *spanset.Set
}

// Verdict is what a shard of the store asks of the traces it holds (package verdict
// implements it). V
// is what the verdict notes of a trace while it is held, K what it remembers of a kept
// trace for its late spans: the store keeps both without looking inside. A shard's Verdict
// is called from that shard's goroutine only.
type Verdict[V, K any] interface {
	// Note notes the spans of set, just added to a trace (front: decoded again, and ahead
	// of the spans noted since), and reports the first root span among them and whether
	// one is in status ERROR.
	Note(v *V, set *spanset.Set, front bool) (root ptrace.Span, hasRoot, hasError bool)
	// ForgetNotes lets go of the notes of spans the store packed.
	ForgetNotes(v *V)
	// TriageAtRoot triages a trace whose root just arrived (whole: every span came with
	// it); triaged is false when it was not, clean says it was proven clean.
	TriageAtRoot(v *V, t *Trace[K], root ptrace.Span, whole bool) (triaged, clean bool)
	// Void forgets that triage: spans arrived after it.
	Void(v *V)
	// Examine reads a trace under memory pressure and reports whether it shows a signal;
	// what it found is kept in v for Decide, or let go by Recycle.
	Examine(v *V, t *Trace[K]) (signal bool)
	Recycle(v *V)
	// Decide decides a trace; early says the decision is provisional (memory pressure,
	// max_trace_bytes). A kept trace's spans are annotated and redacted in place.
	Decide(v *V, t *Trace[K], early bool, now time.Time) Outcome[K]
	// Late handles late spans of a kept trace; changed says k changed and is to be
	// remembered again.
	Late(set *spanset.Set, k K) (_ K, changed bool)
	// Seal seals a span the store forwards.
	Seal(span ptrace.Span)
	// ExpireSuspects and FlushLate tend what the verdict holds between traces: suspects
	// whose window passed, findings found after their trace was decided.
	ExpireSuspects(now time.Time)
	FlushLate(ctx context.Context, next consumer.Traces)
	// Remembered, ForgetPayloads and Marks are what the decision cache needs of a kept
	// verdict: whether it was kept for a signal, its reason and the bytes of its payload
	// fingerprints; dropping those; and two bytes of it for the store's own flags.
	Remembered(k *K) (signal bool, reason string, payloadBytes int64)
	ForgetPayloads(k *K)
	Marks(k *K) *[2]uint8
}

// Verdicts makes the verdict of each shard. Start readies what they share: the HMAC key
// read at start, the store's clock, and the most bytes one trace holds in the store
// (calls held back across a provisional decision take a share of it).
type Verdicts[V, K any] interface {
	Start(key []byte, now func() time.Time, maxTraceBytes int64) error
	Shard() Verdict[V, K]
	// ClientInputs are the attributes under retry_storm's namespace the verdict reads
	// from clients' spans: the store leaves them on arriving spans and takes every other
	// attribute there out (package inbound).
	ClientInputs() []string
}
