package stormsummaryexporter

import (
	"testing"

	"go.uber.org/goleak"
)

// lumberjack starts one compression/cleanup goroutine per file on its first write and
// offers no way to stop it (v2.2.1); it is the only goroutine allowed to outlive a test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
