//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"
)

// poll calls cond every pollInterval until it holds or timeout passes, and reports whether
// it held and cond's last status. cond may fail the test itself (a collector that exited).
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, status := cond()
		if ok || time.Now().After(deadline) {
			return ok, status
		}
		time.Sleep(pollInterval)
	}
}

// eventually is poll that fails the test, with cond's last status, when cond does not hold
// within timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, status := poll(timeout, cond); !ok {
		t.Fatalf("%s: not reached after %s: %s", what, timeout, status)
	}
}

// settled reports whether retry_storm has decided, forwarded or dropped, every span it
// received, with no trace left in its buffer; and how many spans it received.
func settled(m metrics) (ok bool, received int, status string) {
	received = int(m.sum(metricSpansReceived, nil))
	forwarded, dropped := int(m.sum(metricSpansForwarded, nil)), int(m.sum(metricSpansDropped, nil))
	buffered := int(m.sum(metricBufferedTraces, nil))
	return forwarded+dropped == received && buffered == 0, received,
		fmt.Sprintf("received %d spans, forwarded %d, dropped %d, buffered traces %d", received, forwarded, dropped, buffered)
}

// settledAt reports whether retry_storm has received exactly n spans and settled.
func settledAt(m metrics, n int) bool {
	ok, received, _ := settled(m)
	return ok && received == n
}

// scrapeWhile scrapes the collector's metrics, failing the test when the collector has
// exited; it returns the status of a failed scrape.
func scrapeWhile(t *testing.T, p *collectorProcess, port int) (metrics, string) {
	t.Helper()
	p.alive(t)
	m, err := scrape(port)
	if err != nil {
		return nil, err.Error()
	}
	return m, ""
}

// waitSettled polls the collector's metrics until retry_storm has received wantSpans spans
// and settled. It returns a scrape taken after the settled one; on timeout it reports an
// error and returns the last scrape anyway. It fails the test at once when the collector
// exits.
func waitSettled(t *testing.T, p *collectorProcess, port, wantSpans int) metrics {
	t.Helper()
	var last metrics
	ok, status := poll(settleTimeout, func() (bool, string) {
		m, failed := scrapeWhile(t, p, port)
		if m == nil {
			return false, failed
		}
		last = m
		_, _, status := settled(m)
		return settledAt(m, wantSpans), fmt.Sprintf("%s of %d sent", status, wantSpans)
	})
	if !ok {
		t.Errorf("retry_storm not settled after %s: %s", settleTimeout, status)
		return last
	}
	// One scrape more: a storm_calls series (per tool) is observed at 0 by the first scrape
	// that sees it, at its count from the next (the processor README, "Series that start at
	// zero").
	if m, _ := scrapeWhile(t, p, port); m != nil {
		last = m
	}
	return last
}

// waitMetrics polls the metrics until cond holds; it fails the test on timeout or when
// the collector exits, and returns the last scrape.
func waitMetrics(t *testing.T, p *collectorProcess, port int, timeout time.Duration, what string, cond func(metrics) bool) metrics {
	t.Helper()
	var last metrics
	eventually(t, timeout, what, func() (bool, string) {
		m, failed := scrapeWhile(t, p, port)
		if m != nil {
			last = m
		}
		if m == nil || !cond(m) {
			return false, fmt.Sprintf("last scrape error: %q; relevant metrics:\n%s", failed, last.retrystormLines())
		}
		return true, ""
	})
	return last
}

// waitBackendDrained waits until the OTLP exporter has sent (or given up) every span
// retry_storm forwarded, and every late-finding span it made (counted apart, in
// late_findings: a stale read decided before the trace it copied), so the backend holds
// all that it will get.
func waitBackendDrained(t *testing.T, p *collectorProcess, port int) metrics {
	t.Helper()
	backend := map[string]string{"exporter": "otlp_grpc/backend"}
	return waitMetrics(t, p, port, settleTimeout, "the backend exporter drained", func(m metrics) bool {
		out := m.sum(metricSentSpans, backend) + m.sum(metricSendFailed, backend)
		made := m.sum(metricSpansForwarded, nil) + m.sum(metricLateFindings, map[string]string{"outcome": "forwarded"})
		return out == made && m.sum(metricQueueSize, backend) == 0
	})
}
