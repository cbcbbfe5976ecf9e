package metadata

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

// The reason, class and kind values the processor records come from the engine's own
// lists; these are the values metadata.yaml and the README list.
func TestEngineValuesAreTheAttributeEnums(t *testing.T) {
	reasons := append(asStrings(sample.SignalReasons[:]), string(sample.ReasonClean))
	assert.Equal(t, []string{AttributeReasonStorm, AttributeReasonToolError, AttributeReasonDivergence,
		AttributeReasonSpanError, AttributeReasonIncomplete, AttributeReasonClean}, reasons, "reason")
	assert.Equal(t, []string{AttributeClassTransientDependency, AttributeClassChangedArguments,
		AttributeClassRetryAfterSuccess, AttributeClassExhausted, AttributeClassDuplicateSideEffect},
		asStrings(classify.Classes), "class")
	assert.Equal(t, []string{AttributeKindUnrecoveredFailure, AttributeKindResultDrift, AttributeKindStaleCacheSuspect,
		AttributeKindDuplicateSideEffect, AttributeKindUnresolvedAttempt, AttributeKindAttemptGap,
		AttributeKindNestedDuplicate, AttributeKindUnbackedCitation, AttributeKindIncompleteRecord},
		asStrings(findings.Kinds), "kind")
	assert.Equal(t, []string{AttributeUnseenReasonUnanswered, AttributeUnseenReasonArgumentsUnread, AttributeUnseenReasonResultUnread},
		[]string{analysis.UnseenUnanswered, analysis.UnseenArgumentsUnread, analysis.UnseenResultUnread}, "unseen reason")
}

func asStrings[S ~string](values []S) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
