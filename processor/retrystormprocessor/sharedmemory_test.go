package retrystormprocessor_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor/pkg/samplingpolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

type hostWith map[component.ID]component.Component

func (h hostWith) GetExtensions() map[component.ID]component.Component { return h }

// findingsAfterTheSampler runs the retry_storm policy over a clean trace and a stale read
// that copied its result, as tail_sampling would, then sends what the policy kept through
// a retry_storm processor with buffering: false whose host runs the extension when
// shared. It returns the finding kinds of the records the processor wrote.
func findingsAfterTheSampler(t *testing.T, shared, staleFirst bool) []string {
	t.Helper()
	ctx := context.Background()
	extFactory := retrystormpolicyextension.NewFactory()
	ext, err := extFactory.Create(ctx, extensiontest.NewNopSettings(extFactory.Type()), extFactory.CreateDefaultConfig())
	require.NoError(t, err)
	host := hostWith{}
	if shared {
		host[component.NewID(extFactory.Type())] = ext
	}
	require.NoError(t, ext.Start(ctx, host))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(ctx)) })
	policy, err := ext.(samplingpolicy.Extension).NewEvaluator("agents", nil)
	require.NoError(t, err)

	f := retrystormprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*retrystormprocessor.Config)
	cfg.Buffering = false
	sink := &consumertest.TracesSink{}
	p, err := f.CreateTraces(ctx, processortest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx, host))

	original, stale := buffertest.ChargeCardTrace(buffertest.TraceID(1), false), buffertest.StaleRead(buffertest.TraceID(2))
	staleSpans := stale.SpanCount()
	order := []ptrace.Traces{original, stale}
	if staleFirst {
		order = []ptrace.Traces{stale, original}
	}
	for _, td := range order {
		d, err := policy.Evaluate(ctx, td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID(), &samplingpolicy.TraceData{ReceivedBatches: td})
		require.NoError(t, err)
		if d == samplingpolicy.Sampled {
			require.NoError(t, p.ConsumeTraces(ctx, td))
			// The processor decides the released trace before the sampler goes on.
			require.Eventually(t, func() bool { return sink.SpanCount() >= staleSpans }, 10*time.Second, 10*time.Millisecond)
		}
	}
	if staleFirst && shared {
		// The processor held the suspect; the policy's sighting of the original resolves
		// it, and the processor sends the finding on a late-finding span.
		require.Eventually(t, func() bool { return sink.SpanCount() > staleSpans }, 10*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, p.Shutdown(ctx))
	spans := staleSpans
	if staleFirst && shared {
		spans++ // the late-finding span
	}
	require.Equal(t, spans, sink.SpanCount(), "the policy keeps the stale read, leaves the clean original to other policies")
	var kinds []string
	// The latest revision of each call's record.
	latest := map[string]stormrecord.Record{}
	for _, td := range sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					v, ok := span.Attributes().Get(stormrecord.AttrCallSummary)
					if !ok {
						continue
					}
					var r stormrecord.Record
					require.NoError(t, json.Unmarshal([]byte(v.Str()), &r))
					if prev, seen := latest[r.ID]; !seen || r.Revision > prev.Revision {
						latest[r.ID] = r
					}
				}
			}
		}
	}
	for _, r := range latest {
		for _, f := range r.Findings {
			kinds = append(kinds, f.Kind)
		}
	}
	return kinds
}

// TestAfterTailSamplingStaleReadsAreFoundAgainstDroppedTraces: after tail_sampling, the
// processor sees only kept traces, but the trace a stale read copied is most often a clean
// one the sampler dropped. The retry_storm policy assessed it; sharing the policy's
// result memory, the processor still records the stale_cache_suspect finding the policy
// kept the trace for. Without the extension in the collector it cannot.
func TestAfterTailSamplingStaleReadsAreFoundAgainstDroppedTraces(t *testing.T) {
	assert.Contains(t, findingsAfterTheSampler(t, true, false), "stale_cache_suspect")
	assert.NotContains(t, findingsAfterTheSampler(t, false, false), "stale_cache_suspect",
		"without the policy's memory the original is unknown: the control shows what sharing adds")
}

// TestAfterTailSamplingAStaleReadBeforeItsOriginal: the sampler releases the stale read
// before it assesses the original (a later tick, or the order within one). The processor
// holds the suspect; the policy's sighting of the original resolves it in the shared
// memory, and the processor reports the finding on a late-finding span, the call's record
// again at its next revision, as a buffering processor does.
func TestAfterTailSamplingAStaleReadBeforeItsOriginal(t *testing.T) {
	assert.Contains(t, findingsAfterTheSampler(t, true, true), "stale_cache_suspect")
}
