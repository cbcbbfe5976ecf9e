//go:build e2e

package e2e

import (
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// oneShot is a collector started for a few hand-built traces.
type oneShot struct {
	cfg    stormConfig
	p      *collectorProcess
	client *otlpClient
	sink   *consumertest.TracesSink
}

// startOneShot starts a collector (configured by adjust) with a 64 MiB backend.
func startOneShot(t *testing.T, adjust func(*stormConfig)) *oneShot {
	t.Helper()
	dir := t.TempDir()
	cfg := newStormConfig(t, dir)
	cfg.DecisionWait, cfg.RootGrace = "3s", "200ms"
	if adjust != nil {
		adjust(&cfg)
	}
	s := &oneShot{cfg: cfg}
	if !cfg.NoBackend {
		s.sink = &startFaultyBackend(t, cfg.BackendPort).sink
	}
	s.p = startStormCollector(t, dir, cfg)
	s.client = dialOTLP(t, cfg.OTLPPort)
	return s
}

// send exports the requests and waits until retry_storm has decided every span sent so
// far and the backend exporter has drained.
func (s *oneShot) send(t *testing.T, requests ...ptrace.Traces) metrics {
	t.Helper()
	m, err := scrape(s.cfg.MetricsPort)
	if err != nil {
		t.Fatalf("scrape before sending: %v", err)
	}
	spans := int(m.sum(metricSpansReceived, nil))
	for _, td := range requests {
		spans += td.SpanCount()
		s.client.mustExport(t, td)
	}
	m = waitSettled(t, s.p, s.cfg.MetricsPort, spans)
	if !s.cfg.NoBackend {
		m = waitBackendDrained(t, s.p, s.cfg.MetricsPort)
	}
	return m
}
