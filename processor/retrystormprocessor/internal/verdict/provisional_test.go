package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
)

func TestReasonIndexRoundTrips(t *testing.T) {
	for _, r := range append(sample.SignalReasons[:], sample.ReasonClean) {
		assert.Equal(t, r, reasonOf(reasonIndex(r)))
		k := Kept{reason: reasonIndex(r)}
		assert.Equal(t, r, k.Reason())
		assert.Equal(t, r != sample.ReasonClean, k.Signal())
	}
}
