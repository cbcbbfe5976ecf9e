// Package verdict decides one trace: triage → analyse → sample → annotate → redact →
// remember (the stale-cache memory, held suspects and the findings they resolve later).
// It holds no trace between calls and starts no goroutine; the time is given with each
// call. The store (package buffer) holds traces until they are due and hands each to its
// shard's Verdict; a late span of a kept trace takes Late, the same pipeline's late path.
package verdict // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"

import (
	"slices"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/annotate"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/held"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// Verdict decides the traces of one shard. It is not safe for concurrent use: it holds an
// analyzer, a redactor and scratch space.
type Verdict struct {
	cfg      Config
	shared   Shared
	analyzer *analysis.Analyzer
	redactor *redact.Redactor
	sealer   *stormrecord.Sealer
	sizer    ptrace.ProtoMarshaler
	// late is the batch of findings found after their trace was decided (stale.go).
	late       lateBatch
	lastExpire time.Time
}

// New makes a shard's Verdict.
func New(cfg Config, shared Shared) *Verdict {
	return &Verdict{
		cfg: cfg, shared: shared,
		analyzer: analysis.New(cfg.AnalysisConfig, cfg.Key, shared.Memory),
		redactor: redact.New(cfg.Redaction, cfg.Attributes, cfg.Key),
		sealer:   stormrecord.NewSealer(),
	}
}

// Trace is a trace the store holds, as the verdict reads it.
type Trace = held.Trace[Kept]

// Rest is what the rest of a provisionally decided trace knows of that decision.
type Rest = held.Rest[Kept]

// ProvisionalCauses are the causes of a provisional decision, as the cause attribute of
// late_signals names them.
var ProvisionalCauses = []string{metadata.AttributeEarlyCauseMemoryPressure, metadata.AttributeEarlyCauseTraceBytes}

// Notes is what the verdict notes of a trace while the store holds it: each span's
// arrival note, what a triage on the root's arrival kept of a trace it proved clean, and
// what examining it under memory pressure found. The store keeps it with the trace.
type Notes struct {
	arrivals []grouping.Arrival
	settled  *analysis.Settled
	examined examined
}

// Arrivals are the arrival notes of the trace's spans the store holds decoded, in order.
func (n *Notes) Arrivals() []grouping.Arrival { return n.arrivals }

// Settled reports that a triage on the root's arrival proved the trace clean and kept
// what its decision needs.
func (n *Notes) Settled() bool { return n.settled != nil }

// Kept is what the late spans of a kept trace need of its verdict.
type Kept struct {
	Threshold sampling.Threshold
	// Payloads are the fingerprints of the trace's tool payload values, for scrubbing
	// copies in late spans (nil: none, or redaction off).
	Payloads *redact.Values
	Stamp    bool
	// reason is the decision's sampling reason (reasonIndex), for the rest of the trace.
	reason uint8
	// Holder is free for whoever remembers the verdict: the store keeps its own flags of
	// the decision there, so a remembered decision stays three words.
	Holder [2]uint8
}

// Reason is the sampling reason the trace was kept for.
func (k *Kept) Reason() sample.Reason { return reasonOf(k.reason) }

// Signal reports whether the trace was kept for a signal, not as a clean sample.
func (k *Kept) Signal() bool { return k.Reason() != sample.ReasonClean }

// Remembered is what the store's decision cache reads of a kept trace's verdict: whether
// it was kept for a signal, its sampling reason, and the bytes its payload fingerprints
// take.
func (v *Verdict) Remembered(k *Kept) (signal bool, reason string, payloadBytes int64) {
	return k.Signal(), string(k.Reason()), int64(k.Payloads.Bytes())
}

// ForgetPayloads lets go of a kept trace's payload fingerprints (too many to remember).
func (v *Verdict) ForgetPayloads(k *Kept) { k.Payloads = nil }

// Marks are the Holder bytes of a kept verdict, for the store's own flags.
func (v *Verdict) Marks(k *Kept) *[2]uint8 { return &k.Holder }

// Outcome is the verdict on a trace.
type Outcome = held.Outcome[Kept]

// examined is what examining a trace found: its triage, its analysis, or neither.
type examined struct {
	q  *analysis.IndexedTrace
	tr *analysis.Trace
}

// Recycle lets go of what examining the trace found, when it is not decided with it.
func (v *Verdict) Recycle(n *Notes) {
	v.analyzer.Recycle(n.examined.q)
	n.examined = examined{}
}

// Note is the arrival note of each span of set appended to notes, the first root span of
// set (hasRoot: there is one) and whether a span is in status ERROR. A span is read as it
// arrives, while it is still in the CPU's caches; the tree, triage and analysis read the
// notes instead of the span.
func (v *Verdict) Note(n *Notes, set *spanset.Set, front bool) (root ptrace.Span, hasRoot, hasError bool) {
	var notes []grouping.Arrival
	if front {
		// Spans decoded again: their notes go before those of the spans that came after.
		notes = make([]grouping.Arrival, 0, set.Len()+len(n.arrivals))
	} else {
		notes = slices.Grow(n.arrivals, set.Len())
	}
	for _, span := range set.All() {
		a := v.analyzer.Arrival(span)
		if !hasRoot && a.Parent.IsEmpty() {
			root, hasRoot = span, true
		}
		hasError = hasError || analysis.NotedError(a)
		notes = append(notes, a)
	}
	if front {
		notes = append(notes, n.arrivals...)
	}
	n.arrivals = notes
	return root, hasRoot, hasError
}

// ForgetNotes lets go of the arrival notes of spans the store packed: they are noted
// again when decoded.
func (v *Verdict) ForgetNotes(n *Notes) { n.arrivals = nil }

// Void forgets what a triage on the root's arrival kept: spans arrived after it.
func (v *Verdict) Void(n *Notes) { n.settled = nil }

// TriageAtRoot triages a trace whose root just arrived (root; whole: every span of the
// trace came with it). triaged is false when it was not triaged: the configuration leaves
// triage nothing to prove, or sampling keeps the trace even clean. clean says the triage
// proved it clean; what the decision needs of it is kept in n, and its spans need not be
// read again unless sampling keeps it.
func (v *Verdict) TriageAtRoot(n *Notes, t *Trace, root ptrace.Span, whole bool) (triaged, clean bool) {
	if !v.analyzer.Triageable() {
		return false, false
	}
	traceState := root.TraceState().AsRaw()
	if v.shared.Policy.KeepsClean(t.ID, traceState) {
		return false, false
	}
	t.Unpack() // spans held encoded while the root was awaited
	q := v.index(n, t)
	q.Cached = whole
	q = v.analyzer.TriageIndexed(q)
	if q.Clean {
		n.settled = v.analyzer.Settle(q, traceState)
	}
	v.analyzer.Recycle(q)
	return true, n.settled != nil
}

// Examine triages a trace without an error span and analyses it unless triage proved it
// clean, keeping what it found in n for the decision (or Recycle), and reports whether
// the analysis found a signal. A trace sampling keeps even if it is clean is analysed
// either way, so it is analysed without triage; so is a trace memory pressure set aside
// for a signal: triage only proves traces clean, and the trace showed one. A trace proven
// clean on its root's arrival is not read again: the decision takes what that triage
// kept.
func (v *Verdict) Examine(n *Notes, t *Trace) (signal bool) {
	n.examined = v.examine(n, t)
	return n.examined.tr != nil && !n.examined.tr.Signals.Clean()
}

func (v *Verdict) examine(n *Notes, t *Trace) examined {
	if n.settled != nil {
		return examined{}
	}
	t.Unpack()
	q := v.index(n, t)
	if !t.Triaged && !v.shared.Policy.KeepsClean(t.ID, rootTraceState(q.Tree)) {
		if q = v.analyzer.TriageIndexed(q); q.Clean {
			return examined{q: q}
		}
	}
	return examined{q: q, tr: v.analyzer.AnalyzeTree(q.Tree)}
}

// index indexes t's spans for triage and analysis; the tree of the rest of a
// provisionally decided trace says so, for following the model to read the history its
// later model calls record (the outputs that made the requests went with the first part).
func (v *Verdict) index(n *Notes, t *Trace) *analysis.IndexedTrace {
	q := v.analyzer.IndexSpans(t.Set.Len(), t.Set.All(), n.arrivals)
	q.Tree.Rest = t.Rest != nil
	return q
}

// Decide decides a trace, given what examining it found (in n; nothing when it was not
// examined: it showed an error span). A trace triage proved clean and sampling drops (most
// traffic) is done without analysis, its results remembered for the stale-cache check.
// Every other trace is analysed and sampled, and a kept one is annotated, redacted and
// stamped in place; the store forwards it. early says the decision is provisional (made
// under memory pressure or past max_trace_bytes).
func (v *Verdict) Decide(n *Notes, t *Trace, early bool, now time.Time) Outcome {
	q, tr := n.examined.q, n.examined.tr
	n.examined = examined{}
	// The closure reads q when it runs, so it sees the index made below; nothing uses the
	// trace's tree once it is decided.
	defer func() { v.analyzer.Recycle(q) }()
	if settled, clean := n.settled, tr == nil && q != nil && q.Clean; settled != nil || clean {
		in := sample.Input{TraceID: t.ID}
		if settled != nil {
			in.Tools, in.TraceState = settled.Tools, settled.TraceState
		} else {
			in.Tools, in.TraceState = q.Tools, rootTraceState(q.Tree)
		}
		// The rest of a kept trace is kept: it goes on to be analysed and annotated.
		if d := v.shared.Policy.Decide(in); !d.Keep && (t.Rest == nil || t.Rest.Kept == nil) {
			if settled == nil {
				settled = v.analyzer.Settle(q, in.TraceState)
			}
			v.reportResolved(v.analyzer.RememberClean(settled))
			v.shared.Tel.triaged(settled)
			return Outcome{Reason: string(d.Reason)}
		}
	}
	if tr == nil {
		t.Unpack() // a trace proven clean that sampling keeps, or an error trace packed before its error
		if q == nil {
			// An error span (no triage), or a trace proven clean that sampling keeps: the tree all the same.
			q = v.index(n, t)
		}
		tr = v.analyzer.AnalyzeTree(q.Tree)
	}
	v.reportResolved(tr.Resolved)
	d := restDecision(t, v.shared.Policy.Decide(sample.Input{
		TraceID:    t.ID,
		Signals:    signalsOf(tr.Signals),
		Tools:      tr.Tools,
		TraceState: rootTraceState(tr.Tree),
	}))
	if v.cfg.Released {
		d.Stamp = false
	}
	var held *spanset.Set
	if d.Keep && early && t.Fragment {
		held = v.holdBack(t, tr) // before the part is annotated: held calls go on
	}
	v.shared.Tel.analysed(tr)
	v.restAnalysed(t, tr, now)
	if !d.Keep {
		v.holdSuspects(tr, d)
		return Outcome{Reason: string(d.Reason)}
	}
	st := annotate.Apply(tr, annotate.Options{Reason: string(d.Reason), Redact: v.cfg.Hashing.RedactPayloads})
	v.shared.Tel.remapped(st.Remapped)
	kd := Kept{reason: reasonIndex(d.Reason), Stamp: d.Stamp, Threshold: d.Threshold}
	if v.cfg.Hashing.RedactPayloads {
		var known *redact.Values
		if t.Rest != nil && t.Rest.Kept != nil {
			known = t.Rest.Kept.Payloads // copies of the first part's payloads in the rest
		}
		kd.Payloads = v.redactKept(tr, t.Set, known)
	}
	if d.Stamp {
		stampSpans(t.Set, v.shared.Policy, d.Threshold)
	}
	v.holdSuspects(tr, d)
	return Outcome{Keep: true, Reason: string(d.Reason), Kept: kd, Held: held}
}

// Late handles late spans of a kept trace (set), whose verdict was kd. They are not
// analysed as a trace (a fragment would give wrong call counts): an isError attempt among
// them is remapped, a tool attempt gets its payload hashes, the payloads the trace and
// these spans carry are redacted and the sampling threshold stamped, nothing else. It
// returns the trace's verdict with the payloads these spans brought; changed says there
// were some, for the store to remember.
func (v *Verdict) Late(set *spanset.Set, kd Kept) (_ Kept, changed bool) {
	tools, st := annotate.LateSpans(set.All(), v.analyzer.Extractor(), annotate.Options{Redact: v.cfg.Hashing.RedactPayloads})
	v.shared.Tel.remapped(st.Remapped)
	if v.cfg.Hashing.RedactPayloads {
		if vals := v.redactLate(set, tools, kd.Payloads); vals != kd.Payloads {
			// Tool spans among the late ones brought payloads: later spans are scrubbed of them too.
			kd.Payloads, changed = vals, true
		}
	}
	if kd.Stamp {
		stampSpans(set, v.shared.Policy, kd.Threshold)
	}
	return kd, changed
}

// Seal seals a span the processor forwards (processor README, "Security").
func (v *Verdict) Seal(span ptrace.Span) { v.sealer.Seal(span) }

func signalsOf(s analysis.Signals) sample.Signals {
	return sample.Signals{s.Storm, s.ToolError, s.Divergence, s.SpanError, s.Incomplete}
}

// rootTraceState is the tracestate of the trace's root span, or of its first span when the
// root has not arrived.
func rootTraceState(t *grouping.Tree) string {
	nodes := t.Nodes
	for i := range nodes {
		if nodes[i].Span.ParentSpanID().IsEmpty() {
			return nodes[i].Span.TraceState().AsRaw()
		}
	}
	if len(nodes) > 0 {
		return nodes[0].Span.TraceState().AsRaw()
	}
	return ""
}

// stampSpans writes the threshold into every span's tracestate, as the policy stamps.
// Spans sharing a tracestate (the usual case) share one serialisation; a tracestate that
// does not parse, or that the threshold would make invalid, is left as it is.
func stampSpans(set *spanset.Set, policy *sample.Policy, th sampling.Threshold) {
	var lastIn, lastOut string
	have := false
	for _, span := range set.All() {
		raw := span.TraceState().AsRaw()
		if !have || raw != lastIn {
			out, err := policy.Stamp(raw, th)
			if err != nil {
				continue
			}
			lastIn, lastOut, have = raw, out, true
		}
		span.TraceState().FromRaw(lastOut)
	}
}

// Assess reads a whole trace that another sampler holds — triage, then analysis unless
// triage proves it clean, then sampling at v's rates — and returns the decision, writing
// nothing to its spans and recording no metric: the processor after the sampler gives the
// trace its verdict. The results of a trace triage proves clean are remembered for the
// stale-cache check, as Decide remembers those of the clean traces it drops. The trace's
// randomness is its trace id's alone (no tracestate is read).
func (v *Verdict) Assess(td ptrace.Traces) sample.Decision {
	set := spanset.FromTraces(td)
	var n Notes
	v.Note(&n, &set, false)
	q := v.analyzer.IndexSpans(set.Len(), set.All(), n.arrivals)
	defer func() { v.analyzer.Recycle(q) }()
	if q = v.analyzer.TriageIndexed(q); q.Clean {
		settled := v.analyzer.Settle(q, "")
		v.handOff(v.analyzer.RememberClean(settled))
		return v.shared.Policy.Decide(sample.Input{TraceID: settled.TraceID, Tools: settled.Tools})
	}
	tr := v.analyzer.AnalyzeTree(q.Tree)
	v.handOff(tr.Resolved)
	return v.shared.Policy.Decide(sample.Input{TraceID: tr.TraceID, Signals: signalsOf(tr.Signals), Tools: tr.Tools})
}

// handOff leaves the suspects an assessed trace's results resolved to whoever holds them
// (stalecache.Memory.Unclaimed): a processor after the sampler that shares the memory
// reports the findings on its trace's records.
func (v *Verdict) handOff(matches []stalecache.Match) {
	if m, ok := v.shared.Memory.(*stalecache.Memory); ok && m != nil {
		m.Unclaimed(matches)
	}
}
