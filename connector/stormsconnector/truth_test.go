package stormsconnector

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

// pipeline is agentsim traffic through the real retry_storm processor (its offline mode:
// every trace decided when the input ends) into both directions of the connector.
type pipeline struct {
	traces  []agenttraffic.Trace
	metrics *consumertest.MetricsSink
	logs    *consumertest.LogsSink
	clean   float64 // clean_percent / 100
}

func runPipeline(t *testing.T, seed uint64, n int, cleanPercent float64) pipeline {
	t.Helper()
	ctx := context.Background()
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: seed, EveryScenario: true, Interval: time.Millisecond,
		Service: "agent", Base: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	p := pipeline{traces: gen.Generate(n), metrics: new(consumertest.MetricsSink), logs: new(consumertest.LogsSink), clean: cleanPercent / 100}

	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Logs.Include = []string{includeStorm, includeFailure, includeFinding}
	set := connectortest.NewNopSettings(f.Type())
	toMetrics, err := f.CreateTracesToMetrics(ctx, set, cfg, p.metrics)
	require.NoError(t, err)
	toLogs, err := f.CreateTracesToLogs(ctx, set, cfg, p.logs)
	require.NoError(t, err)
	host := componenttest.NewNopHost()
	require.NoError(t, toMetrics.Start(ctx, host))
	require.NoError(t, toLogs.Start(ctx, host))

	pf := retrystormprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*retrystormprocessor.Config)
	pcfg.Sampling.CleanPercent = cleanPercent
	next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		return joinErr(toMetrics.ConsumeTraces(ctx, td), toLogs.ConsumeTraces(ctx, td))
	})
	require.NoError(t, err)
	proc, err := retrystormprocessor.NewOfflineTraces(processortest.NewNopSettings(pf.Type()), pcfg, next)
	require.NoError(t, err)
	require.NoError(t, proc.Start(ctx, host))
	for i := range p.traces {
		require.NoError(t, proc.ConsumeTraces(ctx, agenttraffic.TraceToPdata(&p.traces[i])))
	}
	require.NoError(t, proc.Shutdown(ctx))
	require.NoError(t, toLogs.Shutdown(ctx))
	require.NoError(t, toMetrics.Shutdown(ctx))
	return p
}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// last returns the sums of the last flush, by metric name and then by the data point's
// attributes as sorted JSON.
func (p pipeline) last(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	all := p.metrics.AllMetrics()
	require.NotEmpty(t, all, "no metrics emitted")
	out := map[string]map[string]float64{}
	md := all[len(all)-1]
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i)
		require.Equal(t, pmetric.MetricTypeSum, m.Type(), m.Name())
		require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
		out[m.Name()] = map[string]float64{}
		for j := 0; j < m.Sum().DataPoints().Len(); j++ {
			dp := m.Sum().DataPoints().At(j)
			key, err := json.Marshal(dp.Attributes().AsRaw())
			require.NoError(t, err)
			out[m.Name()][string(key)] = dp.DoubleValue()
		}
	}
	return out
}

func sumWhere(series map[string]float64, match map[string]string) float64 {
	total := 0.0
	for key, v := range series {
		var attrs map[string]string
		_ = json.Unmarshal([]byte(key), &attrs)
		ok := true
		for k, want := range match {
			ok = ok && attrs[k] == want
		}
		if ok {
			total += v
		}
	}
	return total
}

func TestMetricsCountWhatTheGroundTruthInjected(t *testing.T) {
	p := runPipeline(t, 11, 400, 20)
	got := p.last(t)

	// Storms, findings, failed calls and incomplete attempts: their traces are kept whole
	// (keep_percent 100), so the counts are exact, per tool and label.
	wantStorms := map[[2]string]float64{}
	wantFindings := map[string]float64{}
	wantFailed, wantIncomplete := 0.0, 0.0
	var calls, callsVar float64
	for i := range p.traces {
		truth := &p.traces[i].Truth
		for _, r := range truth.Records {
			if r.Storm {
				wantStorms[[2]string{r.Tool, string(r.Class)}]++
			}
			if n := len(r.Statuses); n > 0 && r.Statuses[n-1] != agenttraffic.AttemptOK {
				wantFailed++
			}
			wantIncomplete += float64(r.IncompleteAttempts)
		}
		for _, k := range truth.Findings {
			wantFindings[string(k)]++
		}
		calls += float64(truth.Calls)
		if truth.Reason == agenttraffic.ReasonClean {
			// A clean trace kept with probability p stands for 1/p: its variance.
			callsVar += float64(truth.Calls*truth.Calls) * (1 - p.clean) / p.clean
		}
	}
	require.NotEmpty(t, wantStorms)
	for key, want := range wantStorms {
		require.Equal(t, want, sumWhere(got["retrystorm.storms"], map[string]string{"tool": key[0], "class": key[1]}), "storms of %v", key)
	}
	require.Equal(t, total(wantStorms), sumWhere(got["retrystorm.storms"], nil), "storms in all")
	for kind, want := range wantFindings {
		require.Equal(t, want, sumWhere(got["retrystorm.findings"], map[string]string{"kind": kind}), "findings of kind %s", kind)
	}
	require.Equal(t, totalKinds(wantFindings), sumWhere(got["retrystorm.findings"], nil), "findings in all")
	require.Equal(t, wantFailed, sumWhere(got["retrystorm.calls.failed"], nil), "failed calls")
	require.Equal(t, wantIncomplete, sumWhere(got["retrystorm.attempts.incomplete"], nil), "incomplete attempts")

	// Calls: clean traces are sampled, so the count is an estimate; 4 standard deviations.
	est := sumWhere(got["retrystorm.calls"], nil)
	bound := 4 * math.Sqrt(callsVar)
	require.InDelta(t, calls, est, bound, "calls: truth %v, estimate %v, bound %v", calls, est, bound)
	t.Logf("calls: truth %v, estimate %.1f (bound ±%.1f)", calls, est, bound)
}

func total(m map[[2]string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

func totalKinds(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

var _ connector.Traces = (*stormRecords)(nil)
