package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decisioncache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// Remembering kept decisions. A kept trace's decision holds what its late spans need, the
// fingerprints of its payload values above all: a late span copying a card number is
// scrubbed of it only while the decision is remembered. The cache is bounded in entries
// and bytes (decision_cache.kept_traces, decision_cache.kept_bytes) and forgets clean
// decisions before signal ones, so clients that keep floods of clean traces for themselves
// (`ot=rv` at its maximum) push out only each other. A decision forgotten all the same, or
// one too large to remember (maxDecisionBytes), leaves a mark in the dropped set: spans of
// its trace that come later are dropped and counted, never started over as a new trace,
// whose analysis would know none of the values to scrub and would record its calls again.

// markForgotten marks, in the dropped set, a kept trace whose decision the cache forgot.
const markForgotten = decisioncache.MaxMark

// maxDecisionBytes bounds the payload fingerprints one decision remembers (a shard's
// share of kept_bytes may bound it lower): 2,048 values hunted in three forms each take
// about 147 kB. A decision over it is remembered without them (valuesForgotten).
const maxDecisionBytes = 512 << 10

// remember caches the decision of a kept trace: a signal one is forgotten only after every
// clean one. A decision whose payload values take more than the shard's bound per decision
// keeps its place without them, and the spans of its trace that come later are dropped.
func (s *shard[V, K]) remember(id pcommon.TraceID, kd keptDecision[K]) {
	signal, _, bytes := s.verdict.Remembered(&kd.verdict)
	if bytes > s.cfg.maxDecisionBytes {
		s.verdict.ForgetPayloads(&kd.verdict)
		s.verdict.Marks(&kd.verdict)[markValuesForgotten] = 1
		bytes = 0
	}
	s.cache.Keep(id, kd, signal, bytes)
}

// forget is told by the cache of each kept decision it forgot to make room: the trace is
// marked forgotten among the dropped ones, and a signal decision is counted by its reason
// and logged (rate-limited across shards).
func (s *shard[V, K]) forget(id pcommon.TraceID, kd keptDecision[K], signal bool) {
	s.tel.cacheEvicted(metadata.AttributeDecisionKept)
	if s.cache.Drop(id, markForgotten) {
		s.tel.cacheEvicted(metadata.AttributeDecisionDropped)
	}
	if !signal {
		return
	}
	_, reason, _ := s.verdict.Remembered(&kd.verdict)
	s.tel.signalEvicted(reason)
	if ok, suppressed := s.evictLog.Allow(s.now()); ok {
		kept, _ := s.cache.Len()
		s.logger.Warn("a kept signal decision was evicted from the decision cache; later spans of its trace will be dropped",
			zap.String("trace.id", id.String()),
			zap.String("decision.reason", string(reason)),
			zap.Int("decision_cache.kept", kept),
			zap.Int64("decision_cache.kept_bytes", s.cache.KeptBytes()),
			zap.Int64("log.suppressed", suppressed))
	}
}

// dropForgotten drops spans of a kept trace whose decision, or whose payload values, the
// cache no longer holds.
func (s *shard[V, K]) dropForgotten(spans int64) {
	s.tel.lateSpans(metadata.AttributeLateDecisionForgotten, spans)
	s.tel.droppedSpans(DropForgotten, spans)
}

// evictionLogEvery is the least time between two eviction log lines across shards.
const evictionLogEvery = time.Second
