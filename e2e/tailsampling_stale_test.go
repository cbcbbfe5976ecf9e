//go:build e2e

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// TestTailSamplingStaleReadOfDroppedTrace: stale reads whose earlier trace is a clean one
// tail_sampling drops. Standalone retry_storm reports stale_cache_suspect on each; after
// tail_sampling, retry_storm (buffering: false) never sees the earlier trace, and finds
// the stale read all the same against the retry_storm policy's result memory, which did.
func TestTailSamplingStaleReadOfDroppedTrace(t *testing.T) {
	traces := generate(t, agenttraffic.Config{Seed: 5, Scenarios: agenttraffic.ScenarioWeights{agenttraffic.ScenarioStaleCache: 1}}, 8)
	g := startGateway(t, nil)
	s := startStandalone(t)
	sendWhole(t, g.client, traces, 1)
	spans, _ := sendWhole(t, s.client, traces, 1)
	waitSettled(t, s.p, s.cfg.MetricsPort, spans)
	sm := waitBackendDrained(t, s.p, s.cfg.MetricsPort)
	gm := g.waitDecided(t, len(traces))
	dropped := staleReadsOfDroppedTraces(truthOf(traces), backendTraces(g.sink))
	t.Logf("%d traces, %d stale reads whose earlier trace tail_sampling dropped", len(traces), len(dropped))
	require.NotEmpty(t, dropped, "tail_sampling kept every earlier trace: the case is not exercised")
	kind := map[string]string{"kind": string(agenttraffic.FindingStaleCacheSuspect)}
	require.Positive(t, sm.sum(metricFindings, kind), "standalone found no stale read")
	assert.Equal(t, sm.sum(metricFindings, kind), gm.sum(metricFindings, kind), "stale_cache_suspect findings: gateway, standalone")
}
