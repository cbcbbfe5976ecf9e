package buffer

import (
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// enqueue moves a kept trace's spans into the outgoing batch, under copies of their
// resources and scopes, and seals each span it annotated (it is done with them). A trace
// that would not fit in the batch starts a new one, and one over flushSpans leaves in
// several, so every request stays within what a backend accepts.
func (s *shard[V, K]) enqueue(set *spanset.Set) {
	if s.outSpans+int64(set.Len()) > flushSpans {
		s.flush()
	}
	s.writer.Reset(s.out)
	for _, p := range set.Parts {
		for _, span := range p.Spans {
			if s.outSpans == flushSpans {
				s.flush()
				s.writer.Reset(s.out)
			}
			s.verdict.Seal(span)
			s.writer.Move(p.Origin, span)
			s.outSpans++
		}
	}
	s.writer.Reset(ptrace.Traces{})
	if s.outSpans >= flushSpans {
		s.flush()
	}
}

// flush forwards the outgoing batch. A slow next consumer holds the shard (and, through its
// input channel, ConsumeTraces): that is the processor's backpressure.
func (s *shard[V, K]) flush() {
	s.verdict.FlushLate(s.ctx, s.next)
	if s.outSpans == 0 {
		return
	}
	out, n := s.out, s.outSpans
	s.out, s.outSpans = ptrace.NewTraces(), 0
	if s.ctx.Err() != nil {
		s.tel.droppedSpans(DropShutdown, n)
		return
	}
	if err := s.next.ConsumeTraces(s.ctx, out); err != nil {
		cause := DropNextConsumerError
		if s.ctx.Err() != nil {
			cause = DropShutdown
		}
		s.tel.droppedSpans(cause, n)
		s.logger.Debug("next consumer refused kept spans", zap.Int64("spans", n), zap.Error(err))
		return
	}
	s.tel.forwarded(n)
}
