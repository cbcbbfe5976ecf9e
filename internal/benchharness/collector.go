package benchharness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// collector is a running collector process.
type collector struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	log    string
}

func startCollector(ctx context.Context, c E2ECollector, otlpPort, metricsPort int, logPath string) (*collector, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create collector log: %w", err)
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, c.Binary, "--config", c.Config)
	cmd.Env = append(os.Environ(), fmt.Sprintf("STORMBENCH_OTLP_PORT=%d", otlpPort), fmt.Sprintf("STORMBENCH_METRICS_PORT=%d", metricsPort))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Name, err)
	}
	col := &collector{cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		col.err = cmd.Wait()
		close(col.exited)
	}()
	return col, nil
}

func (c *collector) pid() int { return c.cmd.Process.Pid }

// waitReady waits until the OTLP port accepts connections and the metrics endpoint answers.
func (c *collector) waitReady(ctx context.Context, otlpPort int, metricsURL string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", otlpPort), time.Second)
		if err == nil {
			conn.Close()
			if _, err = scrape(ctx, metricsURL); err == nil {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("collector exited before it was ready: %v (log %s)", c.err, c.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("collector not ready after 30s: %v (log %s)", err, c.log)
		}
	}
}

// stop sends SIGTERM, and SIGKILL if the collector is still running a minute later.
func (c *collector) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux.
const clockTicks = 100

// procCPU reads a process's user + system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process CPU: %w", err)
	}
	return parseStatCPU(string(raw))
}

// parseStatCPU reads utime and stime, fields 14 and 15, counted after the command name
// (which may hold spaces and parentheses, so it is skipped up to the last ')').
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat line")
	}
	fields := strings.Fields(stat[i+1:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, errors.New("short /proc stat line")
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc stat times: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// procRSS reads VmRSS from /proc/<pid>/status, in bytes.
func procRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmRSS(f)
}

func parseVmRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, errors.New("no VmRSS line")
}

// rssSampler polls a process's resident memory until stopped.
type rssSampler struct {
	stopCh chan struct{}
	done   chan struct{}
	peak   int64
	last   int64
}

func newRSSSampler(pid int) *rssSampler {
	s := &rssSampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := procRSS(pid); err == nil {
				s.last, s.peak = v, max(s.peak, v)
			}
			select {
			case <-s.stopCh:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) stop() (peak, last int64) {
	close(s.stopCh)
	<-s.done
	return s.peak, s.last
}

// scrape reads the collector's Prometheus endpoint and sums every metric over its labels.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape collector metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape collector metrics: %s", resp.Status)
	}
	return parseExposition(resp.Body)
}

// parseExposition sums the samples of each metric name in the Prometheus text format; a
// `_total` suffix is dropped so either reader setting reads the same.
func parseExposition(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			rest = rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[strings.TrimSuffix(name, "_total")] += v
	}
	return out, sc.Err()
}
