// Package buffer holds each agent trace of the retry_storm processor until it can be
// decided, has the shard's verdict (package verdict: triage → analyse → sample → annotate →
// redact → remember) decide it, and forwards what sampling keeps. The buffer owns what is
// held and when it is due: routing, span sets (package spanset), packing, the key table,
// the deadline and pressure queues, provisional decisions' bookkeeping and the decision
// cache. The processor's README says what a user configures and observes; this is how the
// buffer does it.
//
// # Receiving
//
// ConsumeTraces cuts a request by trace id (route) and hands each shard its pieces, without
// moving a span: a trace holds its spans where the request left them (spanSet), and each
// resource and scope of the request is copied once, shared by the traces under it. Only a
// kept trace's spans are moved, into the outgoing batch, at its decision; a dropped trace's
// are never moved. A trace holds only its own spans, so nothing of a request outlives its
// undecided spans. Pieces go to the shards all or none (handOver): when a shard's input is
// full the request waits until every shard concerned has room, and a caller that gives up
// meanwhile gets an error with nothing of the request kept, so its retry is not buffered
// twice.
//
// Each shard owns the traces whose ids hash to it: their byte accounting, the deadline
// queues, the decision cache and its verdict, touched only by its goroutine. A span's ids,
// whether it is a tool span (and cites assets), an HTTP send or in status ERROR, are read
// once as it arrives, while it is still in the CPU's caches, and held beside it
// (the verdict's notes, held.Verdict.Note) for the span tree, triage and analysis: a trace decided seconds later
// reads nothing of its other spans again.
//
// # Deciding
//
// A trace is decided at root arrival + root_grace or first span + decision_wait, whichever
// comes first, or earlier under memory pressure, past max_trace_bytes or at shutdown (Cause).
// A trace with no span in status ERROR, whose trace id (or rv) sampling would not keep even
// if it were clean, is first triaged: one pass over its spans reads statuses, call ids,
// attempt numbers, isError flags (a byte scan; a result that might carry the flag counts as
// "might fail") and HTTP sends, hashing nothing. When that pass proves the trace clean —
// every tool attempt surely ok and complete, one attempt per call key, no explicit attempt
// number but 1, no idempotency key repeated across external side effects, fewer HTTP sends
// per attempt than storm_threshold, every cited asset read — and sampling drops it, the
// trace is done: its results are still remembered for the stale-cache check and its
// attempts and calls still counted. Every other trace (a possible signal, or a trace
// sampling keeps even clean and must annotate) gets the full analysis. Triage is an
// optimisation only: the analysis package's tests run every scenario of every
// instrumentation shape through both and fail if triage ever clears a trace the analysis
// flags, and a fuzz target checks the same. Fallback-keyed attempts of one tool under one
// parent have their args compared by a 64-bit fingerprint of the canonical JSON that would
// be hashed, and are hashed only where one of them carries its args hash.
//
// A trace's life is its traceState: pending, triaged on its root's arrival (provenClean or
// unproven), set aside under memory pressure (signalled), decided.
//
// # Triage on the root's arrival
//
// Triage runs when a trace's root arrives (triageAtRoot), not at its deadline: most traces
// arrive whole with their root last, so their spans are still in the CPU's caches then, and
// are not root_grace later. It is skipped where the deadline would skip it — a span in
// status ERROR, a trace sampling keeps even clean, a trace set aside under memory pressure,
// a configuration triage cannot prove anything under — and when root_grace is 0 (the
// deadline is now). What a clean triage yields is held with the trace (in the verdict's notes):
// the tools, the counts, the root's tracestate and, with the stale-cache check on, each ok
// result's fingerprint and start time; max_buffered_bytes does not count it, as it counts
// the spans' OTLP size. At the decision the trace is sampled from that, and if dropped its
// results are remembered for the stale-cache check, without reading a span again. Any span
// of the trace arriving after its root voids that triage, and the decision then triages
// (and analyses) the whole trace as usual; a trace triage did not prove clean is analysed
// at the decision without a second triage. When the decision falls is unchanged, so
// stragglers still count.
//
// # Memory
//
// Spans whose trace will wait compactHold or more for its decision are made compact; spans
// decided sooner are held as they came, since encoding or compacting them would spend CPU on
// memory about to be freed. Compact means one of two forms:
//   - Packed (packed.go): the spans are encoded as OTLP and the decoded ones let go, so they
//     are one pointer-free byte run the garbage collector neither marks nor scans instead of
//     dozens of heap objects per span. This is for spans that will most likely be dropped
//     unread: a trace proven clean on its root's arrival, when root_grace and what is left
//     of decision_wait are both compactHold or more; and the spans of a trace still waiting
//     for its root compactHold after a piece of it arrived, unless decision_wait ends
//     sooner than compactHold later. Pieces that arrived meanwhile are packed with it; a
//     piece arriving later waits compactHold in turn and is then appended. Packed spans are
//     decoded again only when they must be read: the trace's root arrives (triage reads the
//     whole trace), memory pressure or its decision examines it, or sampling keeps it.
//   - Compacted attributes (keyTable): a slice of exactly their length, keys shared through
//     a per-shard table bounded by maxInternedKeys keys of at most maxInternedKeyLen bytes;
//     a span with more than maxCompactedAttrs attributes is left as it came. This is for
//     spans that will be read: a trace waiting for its root that shows an error span (spans
//     packed before the error span arrived stay packed) or that memory pressure set aside,
//     and a rooted trace not proven clean that will wait compactHold or more.
//
// BENCHMARKS.md records what each form saves. Should packed bytes ever fail to decode (pdata
// always decodes what it encoded), their spans are dropped with DropUnpackError.
//
// # Memory pressure
//
// While a shard holds more than its share of max_buffered_bytes (relievePressure), it
// decides complete traces first, oldest root first, then fragments still waiting for their
// root, oldest first. Each is judged: a clean-looking one is decided through normal
// sampling, one showing a signal is set aside (the flagged and setAside queues), and only
// when nothing clean-looking is left are those decided, complete ones first, kept and
// forwarded. A trace set aside is analysed again, whole, at its decision (without triage,
// which only proves traces clean): keeping the first analysis would hold about as much
// again as the spans' own heap while memory is short.
//
// # Provisional decisions
//
// A decision made early under memory pressure or past max_trace_bytes is provisional for the
// rest of the trace (provisional.go). The decision cache marks it so — a mark in the dropped
// set's index, a field of a kept decision, no memory of its own — and spans of the trace
// arriving later are held as a new pending trace, its rest, analysed on its own at its own
// decision. A kept fragment's calls are held back to begin that rest (the verdict's
// holdback.go picks them, holdRest buffers them), so a
// call that goes on across the decision is analysed, recorded and counted once. A kept
// decision the cache forgets leaves a mark among the dropped ones: later spans of its trace
// are dropped, never started over as a new trace (remember.go).
//
// # Forwarding
//
// Kept spans leave each shard in requests of at most flushSpans spans (enqueue): a kept
// trace that does not fit in the current request starts the next, one larger is cut, each
// span under its own resource and scope. A slow next consumer holds the shard that forwards
// to it and, through the shard's input channel, ConsumeTraces: that is the processor's
// backpressure. A stale read decided before the trace it copied is found by whichever shard
// decides that trace, and sent on a late-finding span of its own (the verdict's stale.go).
package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
