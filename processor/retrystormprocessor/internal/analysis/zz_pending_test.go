package analysis

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

func TestZZPending(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures.CaptureDir(), "pending", "*.jsonl"))
	for _, f := range files {
		name := "pending/" + strings.TrimSuffix(filepath.Base(f), ".jsonl")
		requests, truth := fixtures.LoadCapture(t, name)
		if truth.Expect == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want := *truth.Reportable(name)
			td := ptrace.NewTraces()
			for _, r := range requests {
				r.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
			}
			an := New(DefaultConfig(), stalecache.New(100))
			got := an.Analyze(td)
			units, err := truth.Units(want)
			require.NoError(t, err)
			matchCalls(t, got, want)
			matchUnits(t, got, units)
			reason := reasonOf(got.Signals)
			assert.Equal(t, want.SamplingReason(units), reason, "sampling reason")
			t.Logf("unseen %v", got.Unseen)
		})
	}
}
