//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Processor metrics the pipeline test reads (processor/retrystormprocessor/README.md,
// "Telemetry").
const (
	metricPrefix          = "otelcol_processor_retry_storm_"
	metricSpansReceived   = metricPrefix + "spans_received"
	metricSpansForwarded  = metricPrefix + "spans_forwarded"
	metricLateFindings    = metricPrefix + "late_findings"
	metricSpansDropped    = metricPrefix + "spans_dropped"
	metricBufferedTraces  = metricPrefix + "buffered_traces"
	metricTraces          = metricPrefix + "traces"
	metricStormCalls      = metricPrefix + "storm_calls"
	metricFindings        = metricPrefix + "findings"
	metricToolAttempts    = metricPrefix + "tool_attempts"
	metricCalls           = metricPrefix + "calls"
	metricIncomplete      = metricPrefix + "incomplete_attempts"
	metricStatusRemapped  = metricPrefix + "status_remapped"
	metricLateSpans       = metricPrefix + "late_spans"
	metricEarlyDecisions  = metricPrefix + "early_decisions"
	metricStatusFlipCalls = metricPrefix + "status_flip_calls"
)

// sample is one line of the Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is one scrape.
type metrics []sample

// sum adds the samples of name whose labels include every pair of match. A counter that was
// never incremented is absent from the scrape and sums to 0. The `_total` suffix a reader
// configured without without_type_suffix would add is accepted too.
func (m metrics) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.name != name && s.name != name+"_total" {
			continue
		}
		ok := true
		for k, v := range match {
			ok = ok && s.labels[k] == v
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// by sums name per value of label.
func (m metrics) by(name, label string) map[string]int {
	out := map[string]int{}
	for _, s := range m {
		if s.name == name || s.name == name+"_total" {
			out[s.labels[label]] += int(s.value)
		}
	}
	return out
}

// byPair sums name per pair of values of two labels.
func (m metrics) byPair(name, a, b string) map[[2]string]int {
	out := map[[2]string]int{}
	for _, s := range m {
		if s.name == name || s.name == name+"_total" {
			out[[2]string{s.labels[a], s.labels[b]}] += int(s.value)
		}
	}
	return out
}

// scrape fetches and parses the collector's Prometheus endpoint.
func scrape(port int) (metrics, error) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, fmt.Errorf("scrape collector metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read collector metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape collector metrics: %s: %s", resp.Status, tail(string(body), 5))
	}
	return parseExposition(string(body))
}

// parseExposition parses the Prometheus text format: `name{label="value",…} value [ts]`
// lines; comments and blank lines are skipped.
func parseExposition(text string) (metrics, error) {
	var out metrics
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d %q: %w", n+1, line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.name, line = line[:end], line[end:]
	if strings.HasPrefix(line, "{") {
		rest, err := parseLabels(line[1:], s.labels)
		if err != nil {
			return s, err
		}
		line = rest
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("value: %w", err)
	}
	s.value = v
	return s, nil
}

// parseLabels reads `k="v",…}` into labels and returns what follows the closing brace.
func parseLabels(in string, labels map[string]string) (string, error) {
	for {
		in = strings.TrimLeft(in, " ,")
		if strings.HasPrefix(in, "}") {
			return in[1:], nil
		}
		eq := strings.Index(in, "=\"")
		if eq <= 0 {
			return "", fmt.Errorf("label without value in %q", in)
		}
		key := in[:eq]
		in = in[eq+2:]
		var v strings.Builder
		closed := false
		for i := 0; i < len(in); i++ {
			c := in[i]
			switch {
			case c == '\\' && i+1 < len(in):
				i++
				switch in[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(in[i])
				}
			case c == '"':
				in, closed = in[i+1:], true
			default:
				v.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return "", fmt.Errorf("unterminated value of label %s", key)
		}
		labels[key] = v.String()
	}
}

// retrystormLines prints the samples of the processor, the summary exporter and the
// exporters' send counters, for failure messages.
func (m metrics) retrystormLines() string {
	var b strings.Builder
	for _, s := range m {
		if strings.Contains(s.name, "retry_storm") || strings.Contains(s.name, "storm_summary") ||
			strings.HasPrefix(s.name, "otelcol_exporter_") {
			if strings.HasSuffix(s.name, "_bucket") {
				continue
			}
			fmt.Fprintf(&b, "  %s%v %v\n", s.name, s.labels, s.value)
		}
	}
	return b.String()
}

// accounted checks received = forwarded + dropped + buffered spans.
func accounted(m metrics) (received, forwarded, dropped, buffered int, ok bool) {
	received = int(m.sum(metricSpansReceived, nil))
	forwarded = int(m.sum(metricSpansForwarded, nil))
	dropped = int(m.sum(metricSpansDropped, nil))
	buffered = int(m.sum(metricPrefix+"buffered_spans", nil))
	return received, forwarded, dropped, buffered, received == forwarded+dropped+buffered
}

// Exporter metrics the reliability tests read.
const (
	metricRecordsWritten = "otelcol_exporter_storm_summary_records_written"
	metricRecordsDedup   = "otelcol_exporter_storm_summary_records_deduplicated"
	metricWriteErrors    = "otelcol_exporter_storm_summary_write_errors"
	metricSentSpans      = "otelcol_exporter_sent_spans"
	metricSendFailed     = "otelcol_exporter_send_failed_spans"
	metricQueueSize      = "otelcol_exporter_queue_size"
)

func TestParseExposition(t *testing.T) {
	m, err := parseExposition(`# HELP x y
# TYPE otelcol_processor_retry_storm_traces counter
otelcol_processor_retry_storm_traces{decision="kept",reason="storm",service_name="otelcol-retrystorm"} 12
otelcol_processor_retry_storm_traces_total{decision="dropped",reason="clean"} 3 1700000000000
otelcol_processor_retry_storm_findings{kind="a \"quoted\", value\\"} 2
otelcol_processor_retry_storm_buffered_traces 0
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.sum(metricTraces, nil); got != 15 {
		t.Errorf("sum of traces = %v, want 15", got)
	}
	if got := m.sum(metricTraces, map[string]string{"decision": "kept"}); got != 12 {
		t.Errorf("kept traces = %v, want 12", got)
	}
	if got := slices.Sorted(maps.Keys(m.by(metricFindings, "kind"))); !slices.Equal(got, []string{`a "quoted", value\`}) {
		t.Errorf("finding kinds = %q", got)
	}
	if _, err := parseExposition(`x{a="b} 1`); err == nil {
		t.Error("an unterminated label value parsed")
	}
}
