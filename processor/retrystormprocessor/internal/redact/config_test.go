package redact

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
)

// TestPayloadsOfTheAttributeSources: a tool span's payload is where the argument, result
// and idempotency-key sources read it; a source reading an element deletes its whole
// attribute.
func TestPayloadsOfTheAttributeSources(t *testing.T) {
	p := payloadsOf(attrsource.Lists{
		Arguments:      []string{"request#params.arguments", "tool_input"},
		Result:         []string{"tool_response"},
		IdempotencyKey: []string{"idempotency_key"},
		ToolName:       []string{"tool_name"},
	})
	assert.Equal(t, []string{"request", "tool_input", "tool_response", "idempotency_key"}, p.keys)
	assert.Equal(t, []string{"request#params.arguments", "tool_input", "tool_response", "idempotency_key"}, p.sources)
	assert.Equal(t, []string{"idempotency_key"}, p.idempotencyKeys)
}
