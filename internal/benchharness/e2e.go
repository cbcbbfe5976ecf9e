package benchharness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// E2ECollector is one collector binary with its configuration.
type E2ECollector struct {
	Name, Binary, Config string
}

// E2EOptions configures the end-to-end comparison: each collector, started fresh for each
// offered rate, driven by agentsim over OTLP gRPC on loopback.
type E2EOptions struct {
	Collectors []E2ECollector
	// Agentsim is the agentsim binary.
	Agentsim string
	// Rates are the offered loads in traces per second (about 58 spans each).
	Rates []float64
	// Duration is how long each rate is offered; default 10s.
	Duration time.Duration
	// Driver is DriverAgentsim (agentsim processes building every span through the OTel
	// SDK) or DriverReplay (pre-encoded requests of the same generator, sent as they are);
	// default agentsim.
	Driver string
	// Drivers is the number of agentsim processes, or of concurrent replay exporters,
	// sharing a rate; default 2 (agentsim) or 4 (replay).
	Drivers int
	// Settle is how long to wait after the drivers end, so buffered traces are decided
	// (root_grace and decision_wait_after_root_received are 2s); default 5s.
	Settle time.Duration
	// Seed of the first driver; driver i uses Seed+i.
	Seed uint64
	// LogDir receives the collectors' and drivers' output; default a temporary directory.
	LogDir   string
	Progress io.Writer
}

// E2E drivers.
const (
	DriverAgentsim = "agentsim"
	DriverReplay   = "replay"
)

func (o E2EOptions) withDefaults() E2EOptions {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Driver == "" {
		o.Driver = DriverAgentsim
	}
	if o.Drivers <= 0 {
		o.Drivers = map[string]int{DriverAgentsim: 2, DriverReplay: 4}[o.Driver]
	}
	if o.Settle <= 0 {
		o.Settle = 5 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// E2EPoint is one collector at one offered rate.
type E2EPoint struct {
	Collector string
	// Offered is the offered load in traces per second.
	Offered float64
	// Driving is the wall time the drivers ran.
	Driving time.Duration
	// Accepted, Refused and Failed are the receiver's span counts.
	Accepted, Refused, Failed int64
	// CPU is the collector's CPU time from the first span to the end of the settle wait.
	CPU time.Duration
	// PeakRSS and EndRSS are the collector's resident memory, bytes.
	PeakRSS, EndRSS int64
	// DriverErr is set when a driver failed (for instance, spans it could not export).
	DriverErr string
	// DriverCPU is the drivers' CPU time, and Sent the spans they report sent.
	DriverCPU time.Duration
	Sent      int64
}

// AcceptedPerSecond is the spans per second the receiver accepted while driven.
func (p E2EPoint) AcceptedPerSecond() float64 { return float64(p.Accepted) / p.Driving.Seconds() }

// SpansPerCPUSecond is the accepted spans per second of collector CPU.
func (p E2EPoint) SpansPerCPUSecond() float64 { return float64(p.Accepted) / p.CPU.Seconds() }

// Sustained reports a rate taken without refusing, failing or losing data and without the
// drive falling behind: the drivers sent at least 90% of the planned spans (agentsim's
// ticker pacing loses a few percent on a busy machine), the collector accepted what they
// sent, and the drive ended within 5% of the planned time plus slack (what the driver needs
// to start and flush).
func (p E2EPoint) Sustained(plannedSpans float64, duration, slack time.Duration) bool {
	return p.Refused == 0 && p.Failed == 0 && p.DriverErr == "" &&
		float64(p.Sent) >= 0.9*plannedSpans && p.Accepted >= p.Sent-p.Sent/100 &&
		p.Driving <= duration+duration/20+slack
}

// E2EResults are the points of every collector, in rate order.
type E2EResults struct {
	Options E2EOptions
	Points  map[string][]E2EPoint
	// SpansPerTrace converts offered traces into offered spans.
	SpansPerTrace float64
	Elapsed       time.Duration
}

// RunE2E drives every collector at every rate.
func RunE2E(ctx context.Context, o E2EOptions) (*E2EResults, error) {
	o = o.withDefaults()
	if o.LogDir == "" {
		dir, err := os.MkdirTemp("", "stormbench-e2e-")
		if err != nil {
			return nil, fmt.Errorf("create log directory: %w", err)
		}
		o.LogDir = dir
	}
	began := time.Now()
	res := &E2EResults{Options: o, Points: map[string][]E2EPoint{}, SpansPerTrace: 58}
	most := 0.0
	for _, r := range o.Rates {
		most = max(most, r)
	}
	traces := 500
	if o.Driver == DriverReplay {
		traces = int(most*o.Duration.Seconds()) + 1
	}
	w, err := NewWorkload(WorkloadConfig{Seed: o.Seed, Traces: traces, BatchSpans: 512})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	res.SpansPerTrace = float64(w.Spans()) / float64(w.Traces())
	for _, rate := range o.Rates {
		for _, c := range o.Collectors {
			p, err := runPoint(ctx, o, c, rate, w)
			if err != nil {
				return nil, fmt.Errorf("%s at %.0f traces/s: %w", c.Name, rate, err)
			}
			res.Points[c.Name] = append(res.Points[c.Name], p)
			fmt.Fprintf(o.Progress, "stormbench e2e: %-13s offered %5.0f traces/s: accepted %7.0f spans/s, %6.0f spans per CPU-second, peak RSS %4.0f MB, refused %d, driver CPU %.1fs%s\n",
				c.Name, rate, p.AcceptedPerSecond(), p.SpansPerCPUSecond(), float64(p.PeakRSS)/(1<<20), p.Refused, p.DriverCPU.Seconds(), errNote(p.DriverErr))
		}
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

func errNote(s string) string {
	if s == "" {
		return ""
	}
	return " (driver: " + s + ")"
}

// runPoint starts the collector, drives it at rate, waits for its decisions, and reads it.
func runPoint(ctx context.Context, o E2EOptions, c E2ECollector, rate float64, w *Workload) (E2EPoint, error) {
	p := E2EPoint{Collector: c.Name, Offered: rate}
	ports, err := freePorts(2)
	if err != nil {
		return p, err
	}
	tag := fmt.Sprintf("%s-%.0f", c.Name, rate)
	col, err := startCollector(ctx, c, ports[0], ports[1], filepath.Join(o.LogDir, tag+".log"))
	if err != nil {
		return p, err
	}
	defer col.stop()
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])
	if err := col.waitReady(ctx, ports[0], metricsURL); err != nil {
		return p, err
	}
	cpu0, err := procCPU(col.pid())
	if err != nil {
		return p, err
	}
	m0, err := scrape(ctx, metricsURL)
	if err != nil {
		return p, err
	}
	rss := newRSSSampler(col.pid())
	start := time.Now()
	if o.Driver == DriverReplay {
		r := replay(ctx, w, fmt.Sprintf("127.0.0.1:%d", ports[0]), int(rate*o.Duration.Seconds()), rate, o.Drivers)
		p.DriverCPU, p.Sent = r.cpu, int64(r.spans)
		if r.err != nil {
			p.DriverErr = r.err.Error()
		}
	} else {
		p.DriverErr, p.DriverCPU, p.Sent = drive(ctx, o, rate, ports[0], filepath.Join(o.LogDir, tag))
	}
	p.Driving = time.Since(start)
	select {
	case <-ctx.Done():
		return p, ctx.Err()
	case <-time.After(o.Settle):
	}
	cpu1, err := procCPU(col.pid())
	if err != nil {
		return p, err
	}
	m1, err := scrape(ctx, metricsURL)
	if err != nil {
		return p, err
	}
	p.PeakRSS, p.EndRSS = rss.stop()
	p.CPU = cpu1 - cpu0
	p.Accepted = int64(m1["otelcol_receiver_accepted_spans"] - m0["otelcol_receiver_accepted_spans"])
	p.Refused = int64(m1["otelcol_receiver_refused_spans"] - m0["otelcol_receiver_refused_spans"])
	p.Failed = int64(m1["otelcol_receiver_failed_spans"] - m0["otelcol_receiver_failed_spans"])
	return p, nil
}

// drive runs the agentsim drivers at rate traces per second in total and returns what went
// wrong, if anything, as text (a failed driver is a result, not a harness error), the
// drivers' CPU time and the spans they report exported.
func drive(ctx context.Context, o E2EOptions, rate float64, port int, logPrefix string) (string, time.Duration, int64) {
	var wg sync.WaitGroup
	errs := make([]error, o.Drivers)
	cpus := make([]time.Duration, o.Drivers)
	sent := make([]int64, o.Drivers)
	for i := range o.Drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := []string{"--endpoint", fmt.Sprintf("127.0.0.1:%d", port), "--protocol", "grpc",
				"--rate", strconv.FormatFloat(rate/float64(o.Drivers), 'f', -1, 64),
				"--duration", o.Duration.String(), "--seed", strconv.FormatUint(o.Seed+uint64(i), 10)}
			logPath := fmt.Sprintf("%s-driver%d.log", logPrefix, i)
			cpus[i], errs[i] = runLogged(ctx, logPath, o.Agentsim, args...)
			if raw, err := os.ReadFile(logPath); err == nil {
				sent[i] = exportedSpans(string(raw))
			}
		}()
	}
	wg.Wait()
	var msgs []string
	var cpu time.Duration
	var total int64
	for i, err := range errs {
		cpu += cpus[i]
		total += sent[i]
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("driver %d: %v", i, err))
		}
	}
	return strings.Join(msgs, "; "), cpu, total
}

// exportedRe matches agentsim's closing line: "grpc 127.0.0.1:4317: exported 174069 spans, 0
// failed to export".
var exportedRe = regexp.MustCompile(`exported (\d+) spans`)

// exportedSpans reads the spans agentsim reports exported from its output.
func exportedSpans(out string) int64 {
	var n int64
	for _, m := range exportedRe.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		n += v
	}
	return n
}

// runLogged runs a command with its output in logPath and returns its CPU time.
func runLogged(ctx context.Context, logPath, bin string, args ...string) (time.Duration, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return cpu, fmt.Errorf("%w (log %s)", err, logPath)
	}
	return cpu, nil
}

// Highest is the highest offered rate (traces per second) a collector sustained, 0 when
// none.
func (r *E2EResults) Highest(collector string) float64 {
	best := 0.0
	for _, p := range r.Points[collector] {
		if r.sustained(p) && p.Offered > best {
			best = p.Offered
		}
	}
	return best
}

func (r *E2EResults) sustained(p E2EPoint) bool {
	// agentsim processes start an SDK and flush it at the end; a replay starts sending at once.
	slack := 2 * time.Second
	if r.Options.Driver == DriverReplay {
		slack = 100 * time.Millisecond
	}
	return p.Sustained(p.Offered*r.SpansPerTrace*r.Options.Duration.Seconds(), r.Options.Duration, slack)
}

// WriteReport writes the end-to-end table and the highest sustained rates.
func (r *E2EResults) WriteReport(out io.Writer) error {
	bw := bufio.NewWriter(out)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	o := r.Options
	driver := fmt.Sprintf("%d agentsim processes (seeds %d…%d)", o.Drivers, o.Seed, o.Seed+uint64(o.Drivers)-1)
	if o.Driver == DriverReplay {
		driver = fmt.Sprintf("replay of pre-encoded requests (seed %d), %d concurrent exporters", o.Seed, o.Drivers)
	}
	p("End to end: %s over OTLP gRPC on loopback, %s per rate, %s settle, %.1f spans/trace. Run took %s.\n\n",
		driver, o.Duration, o.Settle, r.SpansPerTrace, r.Elapsed.Round(time.Second))
	p("| collector | offered traces/s (spans/s) | sent spans | accepted spans/s | collector CPU s | spans per CPU-second | peak RSS MB | refused | driver CPU s | sustained |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range o.Collectors {
		for _, pt := range r.Points[c.Name] {
			sustained := "yes"
			if !r.sustained(pt) {
				sustained = "no"
				if pt.DriverErr != "" {
					sustained += " (driver failed)"
				}
			}
			p("| %s | %.0f (%.0f) | %d | %.0f | %.2f | %.0f | %.0f | %d | %.1f | %s |\n", c.Name, pt.Offered, pt.Offered*r.SpansPerTrace,
				pt.Sent, pt.AcceptedPerSecond(), pt.CPU.Seconds(), pt.SpansPerCPUSecond(), float64(pt.PeakRSS)/(1<<20), pt.Refused,
				pt.DriverCPU.Seconds(), sustained)
		}
	}
	p("\n")
	for _, c := range o.Collectors {
		p("highest sustained %s: %.0f traces/s (%.0f spans/s)\n", c.Name, r.Highest(c.Name), r.Highest(c.Name)*r.SpansPerTrace)
	}
	return bw.Flush()
}
