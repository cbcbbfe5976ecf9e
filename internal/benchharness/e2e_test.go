package benchharness

import (
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (otel col) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 0 0"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("CPU %s, want %s (utime 250 + stime 75 ticks)", got, want)
	}
	if _, err := parseStatCPU("4242 (short) S 1"); err == nil {
		t.Fatal("short line accepted")
	}
}

func TestParseVmRSS(t *testing.T) {
	got, err := parseVmRSS(strings.NewReader("Name:\totelcol\nVmPeak:\t 2000 kB\nVmRSS:\t  1024 kB\n"))
	if err != nil || got != 1<<20 {
		t.Fatalf("VmRSS = %d, %v", got, err)
	}
	if _, err := parseVmRSS(strings.NewReader("Name:\tx\n")); err == nil {
		t.Fatal("missing VmRSS accepted")
	}
}

func TestParseExposition(t *testing.T) {
	m, err := parseExposition(strings.NewReader(`# HELP otelcol_receiver_accepted_spans x
# TYPE otelcol_receiver_accepted_spans counter
otelcol_receiver_accepted_spans{receiver="otlp",transport="grpc"} 100
otelcol_receiver_accepted_spans{receiver="otlp",transport="http"} 5
otelcol_receiver_refused_spans_total{receiver="otlp",transport="grpc"} 7
otelcol_process_uptime 1.5e+01
`))
	if err != nil {
		t.Fatal(err)
	}
	if m["otelcol_receiver_accepted_spans"] != 105 || m["otelcol_receiver_refused_spans"] != 7 || m["otelcol_process_uptime"] != 15 {
		t.Fatalf("parsed %v", m)
	}
}

func TestHighestSustainedRate(t *testing.T) {
	r := &E2EResults{Options: E2EOptions{Duration: 10 * time.Second}, SpansPerTrace: 50, Points: map[string][]E2EPoint{
		"a": {
			{Offered: 100, Sent: 50_000, Accepted: 50_000, Driving: 10 * time.Second},
			{Offered: 200, Sent: 100_000, Accepted: 100_000, Driving: 10 * time.Second},
			{Offered: 400, Sent: 200_000, Accepted: 200_000, Refused: 10, Driving: 10 * time.Second},
			{Offered: 800, Sent: 100_000, Accepted: 100_000, Driving: 10 * time.Second},
		},
		"b": {{Offered: 100, Sent: 50_000, Accepted: 50_000, DriverErr: "exported 10 of 20 spans"}},
		// Sent everything, but late: the collector held the drive back.
		"c": {
			{Offered: 100, Sent: 50_000, Accepted: 50_000, Driving: 11 * time.Second},
			{Offered: 200, Sent: 100_000, Accepted: 100_000, Driving: 20 * time.Second},
		},
		// Accepted less than was sent.
		"d": {{Offered: 100, Sent: 50_000, Accepted: 40_000, Driving: 10 * time.Second}},
	}}
	if got := r.Highest("a"); got != 200 {
		t.Fatalf("highest sustained a = %v, want 200 (400 refused, 800 fell behind)", got)
	}
	if got := r.Highest("d"); got != 0 {
		t.Fatalf("highest sustained d = %v, want 0 (spans lost)", got)
	}
	if got := r.Highest("c"); got != 100 {
		t.Fatalf("highest sustained c = %v, want 100 (200 took twice the time)", got)
	}
	if got := r.Highest("b"); got != 0 {
		t.Fatalf("highest sustained b = %v, want 0 (its driver failed)", got)
	}
}

func TestExportedSpans(t *testing.T) {
	out := "total 3000 174069 282\n\ngrpc 127.0.0.1:4317: exported 174069 spans, 0 failed to export\n"
	if got := exportedSpans(out); got != 174069 {
		t.Fatalf("exported %d", got)
	}
}
