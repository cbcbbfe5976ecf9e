package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"

// Cause is why a trace was decided when it was. Its String is the value of the cause
// attribute of early_decisions and late_signals.
type Cause uint8

const (
	// CauseDeadline: root_grace after its root arrived, or decision_wait after its first
	// span, whichever came first.
	CauseDeadline Cause = iota
	// CauseMemoryPressure: early, the shard holding more than its share of
	// max_buffered_bytes; provisional for the rest of the trace.
	CauseMemoryPressure
	// CauseTraceBytes: early, the trace past max_trace_bytes; provisional for its rest.
	CauseTraceBytes
	// CauseShutdown: at shutdown, with everything still buffered.
	CauseShutdown
	// CauseReleased: as it arrived, released whole by a sampler before the processor
	// (WithReleasedTraces).
	CauseReleased
)

var causeNames = [...]string{
	CauseDeadline:       "deadline",
	CauseMemoryPressure: metadata.AttributeEarlyCauseMemoryPressure,
	CauseTraceBytes:     metadata.AttributeEarlyCauseTraceBytes,
	CauseShutdown:       metadata.AttributeEarlyCauseShutdown,
	CauseReleased:       "released",
}

func (c Cause) String() string { return causeNames[c] }

// DropCause is why spans were not forwarded. Its String is the value of the cause attribute
// of spans_dropped.
type DropCause uint8

const (
	// DropSampledOut: their trace was decided and sampling dropped it.
	DropSampledOut DropCause = iota
	// DropLate: they came after their trace was dropped for good.
	DropLate
	// DropNextConsumerError: the next consumer refused them.
	DropNextConsumerError
	// DropShutdown: shutdown ran out of time before they were forwarded.
	DropShutdown
	// DropUnpackError: their trace's packed bytes did not decode again.
	DropUnpackError
	// DropForgotten: they came after their trace was kept, and the decision cache no
	// longer held its decision or its payload values (remember.go).
	DropForgotten
)

var dropCauseNames = [...]string{
	DropSampledOut:        metadata.AttributeDropCauseSampledOut,
	DropLate:              metadata.AttributeDropCauseLate,
	DropNextConsumerError: metadata.AttributeDropCauseNextConsumerError,
	DropShutdown:          metadata.AttributeDropCauseShutdown,
	DropUnpackError:       metadata.AttributeDropCauseUnpackError,
	DropForgotten:         metadata.AttributeDropCauseForgotten,
}

func (c DropCause) String() string { return dropCauseNames[c] }
