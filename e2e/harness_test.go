//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// Bounds of the pipeline test's waits. Each is far above what a healthy run needs on a
// two-core machine, so hitting one means something is stuck, not slow.
const (
	readyTimeout    = 30 * time.Second
	agentsimTimeout = 2 * time.Minute
	settleTimeout   = time.Minute
	shutdownTimeout = time.Minute
	pollInterval    = 100 * time.Millisecond
)

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners stay open until
// all ports are chosen so no two are alike; another process may still take one before the
// collector binds it, which shows as a failed start.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// pipelineConfig is what the collector under test is configured with.
type pipelineConfig struct {
	OTLPPort     int
	BackendPort  int
	MetricsPort  int
	SummaryPath  string
	CleanPercent float64
	NumShards    int
}

var pipelineTemplate = template.Must(template.New("config").Parse(`
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{{.OTLPPort}}

processors:
  retry_storm:
    decision_wait: 2s
    root_grace: 200ms
    num_shards: {{.NumShards}}
    sampling:
      clean_percent: {{.CleanPercent}}

exporters:
  storm_summary:
    path: {{.SummaryPath}}
    include: [storm, failure, finding]
  otlp_grpc/backend:
    endpoint: 127.0.0.1:{{.BackendPort}}
    tls:
      insecure: true

service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{.MetricsPort}}
                without_scope_info: true
                without_units: true
                without_type_suffix: true
  pipelines:
    traces:
      receivers: [otlp]
      processors: [retry_storm]
      exporters: [otlp_grpc/backend, storm_summary]
`))

// writeConfig renders cfg into a file in dir and returns its path.
func writeConfig(t *testing.T, dir string, cfg pipelineConfig) string {
	t.Helper()
	var b bytes.Buffer
	if err := pipelineTemplate.Execute(&b, cfg); err != nil {
		t.Fatalf("render collector config: %v", err)
	}
	path := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatalf("write collector config: %v", err)
	}
	return path
}

// collectorProcess is the built distribution running as a subprocess.
type collectorProcess struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startCollector starts the binary with config and stops it (SIGKILL) at cleanup if the test
// has not stopped it; its log is printed when the test failed.
func startCollector(t *testing.T, config string) *collectorProcess {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "collector.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create collector log: %v", err)
	}
	defer logFile.Close()
	cmd := exec.Command(collectorBinary(t), "--config", config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start collector: %v", err)
	}
	p := &collectorProcess{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("collector log (%s):\n%s", logPath, tail(p.log(), 60))
		}
	})
	return p
}

func (p *collectorProcess) log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(read collector log: %v)", err)
	}
	return string(b)
}

// waitListening waits until the collector accepts connections on port: the OTLP receiver
// starts after the rest of the pipeline, so an open receiver port means a ready collector.
func (p *collectorProcess) waitListening(t *testing.T, port int) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(readyTimeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("collector exited before listening on %s: %v", addr, p.waitErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector not listening on %s after %s: %v", addr, readyTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// stop sends SIGTERM and waits for a clean exit: Shutdown is when retry_storm decides and
// flushes whatever it still buffers and the exporters drain their queues.
func (p *collectorProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("send SIGTERM to collector: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(shutdownTimeout):
		t.Fatalf("collector still running %s after SIGTERM", shutdownTimeout)
	}
	if p.waitErr != nil {
		t.Fatalf("collector exited with %v after SIGTERM", p.waitErr)
	}
}

// buildAgentsim builds cmd/agentsim into dir once per test: running the binary avoids a
// `go run` compile inside the measured part of the test.
func buildAgentsim(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "agentsim")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agentsim")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build agentsim: %v\n%s", err, out)
	}
	return bin
}

// runAgentsim runs agentsim to completion and returns its stdout.
func runAgentsim(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agentsim: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("agentsim %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err,
				tail(stdout.String(), 30), stderr.String())
		}
	case <-time.After(agentsimTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("agentsim still running after %s", agentsimTimeout)
	}
	return stdout.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
