//go:build e2e

package e2e

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// TestTailSamplingPerServiceShare: the gateway's checkout-agent-share policy keeps a higher
// share of one service's clean traces (25% of checkout-agent's, beside the 5% baseline of
// every trace) than of another's, and every clean trace it keeps reaches the backend with
// the verdict: redacted, hashed, its sampling reason clean, and no record. The shares are
// decided by the trace ids' hashes, which are fixed here, so the counts are too.
func TestTailSamplingPerServiceShare(t *testing.T) {
	g := startGateway(t, nil)
	const perService = 200
	type sent struct {
		service, secret string
	}
	traces := map[string]sent{}
	var requests []ptrace.Traces
	for _, service := range []string{"checkout-agent", "billing-agent"} {
		for i := range perService {
			name := fmt.Sprintf("tail-sampling/share/%s/%03d", service, i)
			sum := sha256.Sum256([]byte(name))
			var id pcommon.TraceID
			copy(id[:], sum[:16])
			b := continueTrace(id, service, "share", time.Now().Add(-time.Minute))
			secret := fmt.Sprintf("acct-%s-%03d-7f3a9c", service[:4], i)
			root := b.root(1000)
			b.genai(root, "lookup_account", "call_share_"+fmt.Sprint(i), fmt.Sprintf(`{"account":%q}`, secret), 100, 300,
				map[string]any{"gen_ai.tool.call.result": fmt.Sprintf(`{"account":%q,"status":"active"}`, secret)})
			traces[b.traceID()] = sent{service: service, secret: secret}
			requests = append(requests, whole(b))
		}
	}
	m := g.send(t, len(requests), requests...)

	backend := backendTraces(g.sink)
	summary := readSummaryFile(t, g.summaryPath)
	kept := map[string]int{}
	for id, bt := range backend {
		s, ok := traces[id]
		if !ok {
			t.Errorf("trace %s reached the backend and was never sent", id)
			continue
		}
		kept[s.service]++
		if !bt.hasRoot {
			t.Errorf("trace %s (%s): no root at the backend", id, s.service)
			continue
		}
		assert.Equal(t, string(agenttraffic.ReasonClean), strAttr(bt.root, stormrecord.AttrSampling), "sampling reason of %s", id)
		hashed := 0
		for _, span := range bt.spans {
			if strAttr(span, stormrecord.AttrArgsHash) != "" {
				hashed++
			}
			for _, l := range spanLocated(span) {
				if strings.Contains(l.text, s.secret) {
					t.Errorf("trace %s (%s): raw payload %q reached the backend in span %q %s", id, s.service, s.secret, span.Name(), l.where)
				}
			}
		}
		assert.Equal(t, 1, hashed, "tool attempts of %s carrying %s", id, stormrecord.AttrArgsHash)
		assert.Empty(t, summary.recordsOf(id), "records of the clean trace %s", id)
	}
	t.Logf("kept %d of %d checkout-agent traces, %d of %d billing-agent traces", kept["checkout-agent"], perService, kept["billing-agent"], perService)
	assert.Positive(t, m.sum(metricTSPolicyDecisions, map[string]string{"policy": "checkout-agent-share", "decision": "sampled"}),
		"the per-service policy sampled nothing")
	// 25% of checkout-agent's (the baseline's 5% among them: both policies hash the trace
	// id alike) against 5% of billing-agent's.
	assert.Greater(t, kept["checkout-agent"], 2*kept["billing-agent"], "checkout-agent's share is not higher than another service's")
	assert.Positive(t, kept["billing-agent"], "the baseline kept none of another service's traces")
	if t.Failed() {
		t.Logf("metrics:\n%s%s", m.retrystormLines(), tailSamplingLines(m))
	}
}
