package toolspan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A call id that names no call is none: taken for one, ADK Python's "<not specified>"
// would make one call of every failure.
func TestIsPlaceholderID(t *testing.T) {
	for id, want := range map[string]bool{"<not specified>": true, "None": true, "null": true, "": true, " ": true,
		"call_1": false, "toolu_01": false, "<x": false} {
		assert.Equal(t, want, IsPlaceholderID(id), id)
	}
}
