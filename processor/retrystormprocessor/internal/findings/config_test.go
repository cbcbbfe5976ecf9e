package findings

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

func TestNewRules(t *testing.T) {
	r := NewRules(DefaultDivergence(), DefaultCompleteness())
	assert.Equal(t, toolspan.FieldToolName, r.Required)
	assert.Equal(t, DefaultCarried, r.Carried)
	assert.Equal(t, "retrystorm.answer.cited_assets", r.CitedAssetsAttribute)
	assert.Equal(t, DefaultDivergence().StaleCache, r.StaleCache)

	r = NewRules(DefaultDivergence(), CompletenessConfig{Required: []string{"run_id", "call_id", "attempt", "tool_name", "args_hash", "status"}})
	want := toolspan.FieldRunID | toolspan.FieldCallID | toolspan.FieldAttempt | toolspan.FieldToolName | toolspan.FieldArgsHash | toolspan.FieldStatus
	assert.Equal(t, want, r.Required)
}
