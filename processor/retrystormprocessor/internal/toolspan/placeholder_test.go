package toolspan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// A call id that names no call is none: taken for one, ADK Python's "<not specified>"
// would make one call of every failure.
func TestIsPlaceholderID(t *testing.T) {
	for id, want := range map[string]bool{"<not specified>": true, "None": true, "null": true, "": true, " ": true,
		"call_1": false, "toolu_01": false, "<x": false} {
		assert.Equal(t, want, IsPlaceholderID(id), id)
	}
}

func TestAPlaceholderCallIDIsNoCallID(t *testing.T) {
	x := NewExtractor(DefaultConfig(), nil, true)
	a := x.Extract(newSpan(t, "execute_tool charge_card", map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "<not specified>",
	}), pcommon.NewResource())
	assert.Empty(t, a.CallID)
	assert.False(t, a.Has(FieldCallID))
}
