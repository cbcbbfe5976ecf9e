package stormsummaryexporter

import (
	"testing"

	"go.uber.org/goleak"
)

// The rotator's background mill is waited for at close: no goroutine outlives a test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
