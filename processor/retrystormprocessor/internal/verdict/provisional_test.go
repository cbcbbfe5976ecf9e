package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
)

func TestReasonIndexRoundTrips(t *testing.T) {
	for _, r := range append(decision.SignalReasons[:], decision.ReasonClean) {
		assert.Equal(t, r, reasonOf(reasonIndex(r)))
		k := Kept{reason: reasonIndex(r)}
		assert.Equal(t, r, k.Reason())
		assert.Equal(t, r != decision.ReasonClean, k.Signal())
	}
}
