package benchharness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
)

// ScanOptions configures `stormbench scan`: `stormreport scan` over a large per-attempt
// JSONL file, side by side with the per-attempt Python scanner on the same file, and over OTLP/JSON.
type ScanOptions struct {
	// Stormreport is the stormreport binary; Python the interpreter and Script the per-attempt
	// scanner (retry_storm.py).
	Stormreport, Python, Script string
	// AttemptLogBytes and OTLPBytes size the two generated inputs.
	AttemptLogBytes, OTLPBytes int64
	// Repeats of each command, interleaved; medians are reported.
	Repeats int
	// Dir holds the generated inputs (kept between runs when given).
	Dir  string
	Seed uint64
	// ScanArgs are extra flags of every stormreport scan run.
	ScanArgs []string
	Progress io.Writer
}

// ScanRun is one timed command.
type ScanRun struct {
	Name       string
	Wall, CPU  time.Duration
	MaxRSSKiB  int64
	InputBytes int64
	Attempts   int64 // per-attempt JSONL attempts in the input; 0 for OTLP
	Spans      int64
}

// ScanResult holds every run of every command, in run order.
type ScanResult struct {
	Runs                       []ScanRun
	AttemptLogBytes, OTLPBytes int64
	LoggedAttempts, Spans      int64
}

// RunScan generates the inputs (unless present in Dir) and times the commands.
func RunScan(ctx context.Context, o ScanOptions) (ScanResult, error) {
	var res ScanResult
	if o.Repeats <= 0 {
		o.Repeats = 3
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "stormbench-scan-*")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	attemptLogPath := filepath.Join(o.Dir, fmt.Sprintf("attempts-%d.jsonl", o.AttemptLogBytes))
	otlpPath := filepath.Join(o.Dir, fmt.Sprintf("traces-%d.json", o.OTLPBytes))
	var err error
	if res.LoggedAttempts, err = ensureInput(attemptLogPath, o, func(w *bufio.Writer) (int64, error) {
		return WriteAttemptLog(w, o.AttemptLogBytes, o.Seed)
	}); err != nil {
		return res, err
	}
	if res.Spans, err = ensureInput(otlpPath, o, func(w *bufio.Writer) (int64, error) {
		return WriteAgentTraffic(w, o.OTLPBytes, o.Seed)
	}); err != nil {
		return res, err
	}
	res.AttemptLogBytes, res.OTLPBytes = fileSize(attemptLogPath), fileSize(otlpPath)
	commands := []struct {
		name     string
		argv     []string
		stdin    string
		in       int64
		attempts int64
		spans    int64
	}{
		{"python per-attempt scanner", []string{o.Python, o.Script}, attemptLogPath, res.AttemptLogBytes, res.LoggedAttempts, 0},
		{"scan --attempt-report", append(append([]string{o.Stormreport, "scan"}, o.ScanArgs...), "--attempt-report", attemptLogPath), "", res.AttemptLogBytes, res.LoggedAttempts, 0},
		{"scan (records, per-attempt input)", append(append([]string{o.Stormreport, "scan"}, o.ScanArgs...), "--json", attemptLogPath), "", res.AttemptLogBytes, res.LoggedAttempts, 0},
		{"scan (records, OTLP/JSON)", append(append([]string{o.Stormreport, "scan"}, o.ScanArgs...), "--json", otlpPath), "", res.OTLPBytes, 0, res.Spans},
	}
	for i := range o.Repeats {
		for _, c := range commands {
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "stormbench scan: run %d of %d: %s\n", i+1, o.Repeats, c.name)
			}
			run, err := timeCommand(ctx, c.argv, c.stdin)
			if err != nil {
				return res, fmt.Errorf("%s: %w", c.name, err)
			}
			run.Name, run.InputBytes, run.Attempts, run.Spans = c.name, c.in, c.attempts, c.spans
			res.Runs = append(res.Runs, run)
		}
	}
	return res, nil
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// ensureInput writes path with write unless it exists; the count of what it holds is kept
// beside it.
func ensureInput(path string, o ScanOptions, write func(*bufio.Writer) (int64, error)) (int64, error) {
	countPath := path + ".count"
	if b, err := os.ReadFile(countPath); err == nil {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil && fileSize(path) > 0 {
			return n, nil
		}
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "stormbench scan: writing %s\n", filepath.Base(path))
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, err := write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return n, os.WriteFile(countPath, []byte(strconv.FormatInt(n, 10)), 0o600)
}

// timeCommand runs argv (stdin from a file when given, stdout discarded) and measures its
// wall time, CPU time (user + system) and peak resident memory.
func timeCommand(ctx context.Context, argv []string, stdin string) (ScanRun, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout = io.Discard
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			return ScanRun{}, err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return ScanRun{}, fmt.Errorf("%v: %w\n%s", argv, err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return ScanRun{}, errors.New("no resource usage for the command")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return ScanRun{Wall: wall, CPU: cpu, MaxRSSKiB: ru.Maxrss}, nil
}

// limitedBuffer keeps the last 8 kB written to it: a failing command's error output.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p...)
	if len(l.b) > 8<<10 {
		l.b = l.b[len(l.b)-8<<10:]
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// WriteAttemptLog writes about size bytes of per-attempt JSONL: runs of a few calls (each
// call its own span_id, as the format asks: the per-attempt scanner groups by span_id alone), each
// tried once or, one call in 25, two to four times with status flips, a changed
// argument hash now and then, an incomplete attempt one in a hundred and another event one
// line in fifty. It returns the tool_attempt lines written.
func WriteAttemptLog(w *bufio.Writer, size int64, seed uint64) (int64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	tools := []string{"charge_card", "search_docs", "fetch_url", "lookup_customer", "send_email", "query_warehouse"}
	statuses := []string{"error", "timeout"}
	effects := []string{"none", "unknown", "external"}
	var written, attempts int64
	t := int64(1757385600000)
	for run := 0; written < size; run++ {
		runID := fmt.Sprintf("run_%08x", run)
		line := fmt.Sprintf(`{"event":"run_start","run_id":"%s","t":%d}`+"\n", runID, t)
		n, err := w.WriteString(line)
		written += int64(n)
		if err != nil {
			return attempts, err
		}
		for call := range 2 + rng.IntN(6) {
			tool := tools[rng.IntN(len(tools))]
			tries := 1
			if rng.IntN(25) == 0 {
				tries = 2 + rng.IntN(3)
			}
			args := rng.Uint32()
			for a := 1; a <= tries; a++ {
				status := "ok"
				if a < tries {
					status = statuses[rng.IntN(len(statuses))]
				}
				if a > 1 && rng.IntN(5) == 0 {
					args = rng.Uint32()
				}
				start := t
				t += 50 + rng.Int64N(2000)
				argsField := fmt.Sprintf(`"args_hash":"%08x",`, args)
				if rng.IntN(100) == 0 {
					argsField = ""
				}
				line := fmt.Sprintf(`{"event":"tool_attempt","run_id":"%s","span_id":"span_%08x_%d","attempt":%d,"tool_name":"%s",%s"idem_hash":"%08x","status":"%s","t_start":%d,"t_end":%d,"token_in":%d,"token_out":%d,"side_effect":"%s"}`+"\n",
					runID, run, call, a, tool, argsField, args^0x9e3779b9, status, start, t, 200+rng.IntN(900), rng.IntN(200), effects[rng.IntN(len(effects))])
				n, err := w.WriteString(line)
				written += int64(n)
				attempts++
				if err != nil {
					return attempts, err
				}
				if rng.IntN(50) == 0 {
					n, err := fmt.Fprintf(w, `{"event":"model_tokens","run_id":"%s","tokens":%d}`+"\n", runID, rng.IntN(4000))
					written += int64(n)
					if err != nil {
						return attempts, err
					}
				}
			}
		}
	}
	return attempts, nil
}

// WriteAgentTraffic writes about size bytes of agentsim's traffic (the mix) as the file
// exporter writes OTLP/JSON, one trace per line. It returns the spans written.
func WriteAgentTraffic(w *bufio.Writer, size int64, seed uint64) (int64, error) {
	gen, err := agenttraffic.NewGenerator(agenttraffic.Config{Seed: seed, Interval: 10 * time.Millisecond, Service: "bench-agent",
		Base: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		return 0, err
	}
	m := &ptrace.JSONMarshaler{}
	var written, spans int64
	for written < size || gen.Pending() {
		tr := gen.Next()
		b, err := m.MarshalTraces(agenttraffic.TraceToPdata(&tr))
		if err != nil {
			return spans, err
		}
		n, err := w.Write(append(b, '\n'))
		written += int64(n)
		spans += int64(len(tr.Spans))
		if err != nil {
			return spans, err
		}
	}
	return spans, nil
}

// ScanReport writes the runs and the medians as markdown, then one ratio line per target.
func ScanReport(w io.Writer, res ScanResult) {
	fmt.Fprintf(w, "inputs: per-attempt JSONL %s (%d attempts), OTLP/JSON %s (%d spans)\n\n", mib(res.AttemptLogBytes), res.LoggedAttempts, mib(res.OTLPBytes), res.Spans)
	fmt.Fprintln(w, "| command | run | wall s | CPU s | MB/s (wall) | attempts or spans /s | max RSS MiB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	byName := map[string][]ScanRun{}
	var names []string
	for _, r := range res.Runs {
		if _, ok := byName[r.Name]; !ok {
			names = append(names, r.Name)
		}
		byName[r.Name] = append(byName[r.Name], r)
		fmt.Fprintf(w, "| %s | %d | %.1f | %.1f | %.1f | %.0f | %d |\n", r.Name, len(byName[r.Name]), r.Wall.Seconds(), r.CPU.Seconds(),
			mbps(r), perSecond(r), r.MaxRSSKiB/1024)
	}
	fmt.Fprintln(w, "\nmedians:")
	fmt.Fprintln(w, "| command | wall s | MB/s | attempts or spans /s | max RSS MiB |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	med := map[string]ScanRun{}
	for _, n := range names {
		m := medianRun(byName[n])
		med[n] = m
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.0f | %d |\n", n, m.Wall.Seconds(), mbps(m), perSecond(m), m.MaxRSSKiB/1024)
	}
	py, sr := med["python per-attempt scanner"], med["scan --attempt-report"]
	if py.Wall > 0 && sr.Wall > 0 {
		fmt.Fprintf(w, "\nratio throughput scan_attempt_report/python=%.2f\n", py.Wall.Seconds()/sr.Wall.Seconds())
		fmt.Fprintf(w, "ratio throughput scan_records_attempt_log/python=%.2f\n", py.Wall.Seconds()/med["scan (records, per-attempt input)"].Wall.Seconds())
	}
	for _, n := range names[1:] {
		fmt.Fprintf(w, "max_rss_mib %s=%d\n", slugOf(n), med[n].MaxRSSKiB/1024)
	}
}

func mbps(r ScanRun) float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.InputBytes) / (1 << 20) / r.Wall.Seconds()
}

func perSecond(r ScanRun) float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Attempts+r.Spans) / r.Wall.Seconds()
}

// medianRun is the run of median wall time; its memory is the median peak.
func medianRun(runs []ScanRun) ScanRun {
	byWall := slices.Clone(runs)
	slices.SortFunc(byWall, func(a, b ScanRun) int { return int(a.Wall - b.Wall) })
	m := byWall[len(byWall)/2]
	rss := make([]int64, len(runs))
	for i, r := range runs {
		rss[i] = r.MaxRSSKiB
	}
	slices.Sort(rss)
	m.MaxRSSKiB = rss[len(rss)/2]
	return m
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func slugOf(name string) string {
	out := make([]byte, 0, len(name))
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			out = append(out, c)
		case len(out) > 0 && out[len(out)-1] != '_':
			out = append(out, '_')
		}
	}
	for len(out) > 0 && out[len(out)-1] == '_' {
		out = out[:len(out)-1]
	}
	return string(out)
}
