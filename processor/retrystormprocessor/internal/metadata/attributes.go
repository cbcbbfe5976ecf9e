package metadata // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"

// Values of the processor's metric attributes, one per enum value in metadata.yaml, named
// Attribute<attribute><value> after the attribute's key there (an attribute whose
// name_override is shared, such as cause, has one key per metric family).
const (
	// decision: traces, decision_cache_evictions.
	AttributeDecisionKept    = "kept"
	AttributeDecisionDropped = "dropped"

	// late_decision (decision): late_spans.
	AttributeLateDecisionKept        = "kept"
	AttributeLateDecisionDropped     = "dropped"
	AttributeLateDecisionProvisional = "provisional"
	AttributeLateDecisionForgotten   = "forgotten"

	// reason: traces, late_signals.
	AttributeReasonStorm      = "storm"
	AttributeReasonToolError  = "tool_error"
	AttributeReasonDivergence = "divergence"
	AttributeReasonSpanError  = "span_error"
	AttributeReasonIncomplete = "incomplete"
	AttributeReasonClean      = "clean"

	// signal_reason (reason): signal_decisions_evicted.
	AttributeSignalReasonStorm      = "storm"
	AttributeSignalReasonToolError  = "tool_error"
	AttributeSignalReasonDivergence = "divergence"
	AttributeSignalReasonSpanError  = "span_error"
	AttributeSignalReasonIncomplete = "incomplete"

	// drop_cause (cause): spans_dropped.
	AttributeDropCauseSampledOut        = "sampled_out"
	AttributeDropCauseLate              = "late"
	AttributeDropCauseNextConsumerError = "next_consumer_error"
	AttributeDropCauseShutdown          = "shutdown"
	AttributeDropCauseUnpackError       = "unpack_error"
	AttributeDropCauseForgotten         = "forgotten"

	// early_cause (cause): early_decisions.
	AttributeEarlyCauseMemoryPressure = "memory_pressure"
	AttributeEarlyCauseTraceBytes     = "trace_bytes"
	AttributeEarlyCauseShutdown       = "shutdown"

	// provisional_cause (cause): late_signals.
	AttributeProvisionalCauseMemoryPressure = "memory_pressure"
	AttributeProvisionalCauseTraceBytes     = "trace_bytes"

	// field: timestamps_clamped.
	AttributeFieldStart = "start"
	AttributeFieldEnd   = "end"

	// class: storm_calls.
	AttributeClassTransientDependency = "transient_dependency"
	AttributeClassChangedArguments    = "changed_arguments"
	AttributeClassRetryAfterSuccess   = "retry_after_success"
	AttributeClassExhausted           = "exhausted"
	AttributeClassDuplicateSideEffect = "duplicate_side_effect"

	// kind: findings.
	AttributeKindUnrecoveredFailure  = "unrecovered_failure"
	AttributeKindResultDrift         = "result_drift"
	AttributeKindStaleCacheSuspect   = "stale_cache_suspect"
	AttributeKindDuplicateSideEffect = "duplicate_side_effect"
	AttributeKindUnresolvedAttempt   = "unresolved_attempt"
	AttributeKindAttemptGap          = "attempt_gap"
	AttributeKindNestedDuplicate     = "nested_duplicate"
	AttributeKindUnbackedCitation    = "unbacked_citation"
	AttributeKindIncompleteRecord    = "incomplete_record"

	// where: redactions.
	AttributeWhereToolSpan       = "tool_span"
	AttributeWhereIdempotencyKey = "idempotency_key"
	AttributeWhereMessage        = "message"
	AttributeWhereEvent          = "event"
	AttributeWhereScrubbed       = "scrubbed"
	AttributeWhereUnparseable    = "unparseable"
	AttributeWhereConfigured     = "configured"

	// suspect_outcome (outcome): stale_cache_suspects.
	AttributeSuspectOutcomeHeld     = "held"
	AttributeSuspectOutcomeResolved = "resolved"
	AttributeSuspectOutcomeExpired  = "expired"
	AttributeSuspectOutcomeEvicted  = "evicted"

	// unseen_reason (reason): unseen_tool_calls.
	AttributeUnseenReasonUnanswered      = "unanswered"
	AttributeUnseenReasonArgumentsUnread = "arguments_unread"
	AttributeUnseenReasonResultUnread    = "result_unread"

	// late_finding_outcome (outcome): late_findings.
	AttributeLateFindingOutcomeForwarded         = "forwarded"
	AttributeLateFindingOutcomeTraceDropped      = "trace_dropped"
	AttributeLateFindingOutcomeNextConsumerError = "next_consumer_error"
	AttributeLateFindingOutcomeShutdown          = "shutdown"

	// annotation_where (where): client_annotations_removed.
	AttributeAnnotationWhereSpan      = "span"
	AttributeAnnotationWhereEvent     = "event"
	AttributeAnnotationWhereLink      = "link"
	AttributeAnnotationWhereResource  = "resource"
	AttributeAnnotationWhereScope     = "scope"
	AttributeAnnotationWhereSpanName  = "span_name"
	AttributeAnnotationWhereEventName = "event_name"
)
