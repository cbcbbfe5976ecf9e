package retrystormpolicyextension

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/fixtures"
)

// cleanFixtures are the fixtures without a signal (testdata/traces/README.md): the only
// ones a retry_storm policy leaves to the others.
var cleanFixtures = map[string]bool{"vercel_v6.json": true}

// findingOnlyFixtures are kept for a finding, without a storm or a tool error.
var findingOnlyFixtures = map[string]bool{"mixed_subagent_duplicate.json": true}

// extensionHost is a collector host holding the retry_storm extension, as tail_sampling
// finds its policy extensions.
type extensionHost struct {
	extensions map[component.ID]component.Component
}

func (h extensionHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

// TestTailSamplingPolicies runs the real tail_sampling processor with retry_storm as a
// policy: alone, with a block of its own, inside and, composite and drop. Every fixture
// trace goes through it, plus a second clean trace; what reaches the sink is what the
// policies decided.
func TestTailSamplingPolicies(t *testing.T) {
	retryStorm := map[string]any{"name": "retry-storm", "type": "retry_storm"}
	tests := []struct {
		name     string
		policies []any
		// kept says whether a fixture reaches the sink.
		kept func(name string) bool
	}{
		{
			name:     "alone",
			policies: []any{retryStorm},
			kept:     func(name string) bool { return !cleanFixtures[name] },
		},
		{
			name: "alone, storms only",
			policies: []any{map[string]any{"name": "storms-only", "type": "retry_storm", "retry_storm": map[string]any{
				"keep_percent": map[string]any{"tool_error": 0, "divergence": 0, "span_error": 0, "incomplete": 0},
			}}},
			kept: func(name string) bool { return !cleanFixtures[name] && !findingOnlyFixtures[name] },
		},
		{
			name: "inside and",
			policies: []any{map[string]any{"name": "storm-and-sampled", "type": "and", "and": map[string]any{
				"and_sub_policy": []any{retryStorm, map[string]any{"name": "all", "type": "always_sample"}},
			}}},
			kept: func(name string) bool { return !cleanFixtures[name] },
		},
		{
			name: "inside composite",
			policies: []any{map[string]any{"name": "budget", "type": "composite", "composite": map[string]any{
				"max_total_spans_per_second": 100000,
				"policy_order":               []any{"retry-storm"},
				"composite_sub_policy":       []any{retryStorm},
				"rate_allocation":            []any{map[string]any{"policy": "retry-storm", "percent": 100}},
			}}},
			kept: func(name string) bool { return !cleanFixtures[name] },
		},
		{
			name: "inside drop",
			policies: []any{
				map[string]any{"name": "drop-storms", "type": "drop", "drop": map[string]any{"drop_sub_policy": []any{retryStorm}}},
				map[string]any{"name": "keep-the-rest", "type": "always_sample"},
			},
			kept: func(name string) bool { return cleanFixtures[name] },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			traces, names := fixtureTraces(t)
			want := map[pcommon.TraceID]bool{}
			for id, name := range names {
				if tt.kept(name) {
					want[id] = true
				}
			}
			sink := runTailSampling(t, tt.policies, traces, len(want))
			got := map[pcommon.TraceID]bool{}
			for _, td := range sink.AllTraces() {
				for id := range traceIDs(td) {
					got[id] = true
				}
			}
			for id := range maps.Keys(names) {
				assert.Equalf(t, want[id], got[id], "%s (%s)", names[id], id)
			}
			assert.Equal(t, totalSpans(traces, want), sink.SpanCount(), "kept traces are whole")
		})
	}
}

// fixtureTraces loads every fixture, plus vercel_v6 under another trace id as a second
// clean trace, and names each trace id by its fixture.
func fixtureTraces(t *testing.T) ([]ptrace.Traces, map[pcommon.TraceID]string) {
	t.Helper()
	names := map[pcommon.TraceID]string{}
	var traces []ptrace.Traces
	for _, name := range fixtures.Names() {
		td := fixtures.Load(t, name)
		traces = append(traces, td)
		names[traceIDOf(td)] = name
	}
	second := fixtures.Load(t, "vercel_v6.json")
	id := pcommon.TraceID{0x5e, 0xc0, 0x4d, 0xc1, 0xea, 0x40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, rs := range second.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				span.SetTraceID(id)
			}
		}
	}
	traces = append(traces, second)
	names[id] = "vercel_v6.json"
	return traces, names
}

// runTailSampling starts tail_sampling with policies and the retry_storm extension, feeds
// it traces, waits (bounded) until wantTraces traces reached the sink, and shuts it down,
// which decides whatever is still pending: the sink then holds every decision.
func runTailSampling(t *testing.T, policies []any, traces []ptrace.Traces, wantTraces int) *consumertest.TracesSink {
	t.Helper()
	ctx := context.Background()
	ext, err := NewFactory().Create(ctx, extensiontest.NewNopSettings(metadata.Type), createDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, extensionHost{}))
	defer func() { require.NoError(t, ext.Shutdown(ctx)) }()
	host := extensionHost{extensions: map[component.ID]component.Component{component.NewID(metadata.Type): ext}}

	factory := tailsamplingprocessor.NewFactory()
	cfg := factory.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"decision_wait": "1s",
		"num_shards":    2,
		"policies":      policies,
	}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	sink := &consumertest.TracesSink{}
	p, err := factory.CreateTraces(ctx, processortest.NewNopSettings(factory.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx, host))
	for _, td := range traces {
		require.NoError(t, p.ConsumeTraces(ctx, td))
	}
	assert.Eventually(t, func() bool {
		n := 0
		for _, td := range sink.AllTraces() {
			n += len(traceIDs(td))
		}
		return n >= wantTraces
	}, 15*time.Second, 20*time.Millisecond)
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, p.Shutdown(shutdownCtx))
	return sink
}

func traceIDs(td ptrace.Traces) map[pcommon.TraceID]bool {
	ids := map[pcommon.TraceID]bool{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				ids[span.TraceID()] = true
			}
		}
	}
	return ids
}

func traceIDOf(td ptrace.Traces) pcommon.TraceID {
	for id := range traceIDs(td) {
		return id
	}
	return pcommon.TraceID{}
}

func totalSpans(traces []ptrace.Traces, of map[pcommon.TraceID]bool) int {
	n := 0
	for _, td := range traces {
		if of[traceIDOf(td)] {
			n += td.SpanCount()
		}
	}
	return n
}
