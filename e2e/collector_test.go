//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the tests' waits. Each is far above what a healthy run needs on a two-core
// machine, so hitting one means something is stuck, not slow.
const (
	readyTimeout    = 30 * time.Second
	agentsimTimeout = 2 * time.Minute
	settleTimeout   = time.Minute
	shutdownTimeout = time.Minute
	pollInterval    = 100 * time.Millisecond
)

// repoRoot is where the collector runs, so relative paths in the configs (./_run/…)
// resolve as they do for a user starting it from a checkout.
const repoRoot = ".."

// collectorBinary returns the absolute path of the built distribution.
func collectorBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(repoRoot, "_build", "otelcol-retrystorm"))
	if err != nil {
		t.Fatalf("resolve collector binary path: %v", err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("collector binary %s is missing: run make build first (%v)", bin, err)
	}
	return bin
}

// freePorts returns n free TCP ports on 127.0.0.1, none handed out before in this
// process, below the kernel's ephemeral range: a port from that range (what a listener on
// port 0 gets) can be taken, between the check and the collector's bind, by any outgoing
// connection, a Prometheus scrape or an exporter's, and the collector then fails to start
// with "address already in use". Another process may still bind one first.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	low := ephemeralLow()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10000 {
			t.Fatalf("find %d free ports below %d", n, low)
		}
		port := minTestPort + rand.IntN(low-minTestPort)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports
}

// minTestPort is the lowest port freePorts hands out: above the well-known and the most
// used registered ones.
const minTestPort = 20000

// handedOut is every port freePorts handed out in this process: never twice, though a
// test that closed its collector has freed it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// ephemeralLow is the lowest port of the kernel's ephemeral range (32768 when it cannot
// be read): ports the kernel gives outgoing connections and listeners on port 0.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= minTestPort+1000 {
		return 32768
	}
	return low
}

// collectorProcess is the built distribution running as a subprocess.
type collectorProcess struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startCollector starts the binary with the config file, env added to its environment. Its
// output is appended to logPath, so a restarted collector keeps one log. It is killed at
// cleanup if the test has not stopped it, and its log is printed when the test failed.
func startCollector(t *testing.T, config, logPath string, env ...string) *collectorProcess {
	t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("open collector log: %v", err)
	}
	defer logFile.Close()
	cmd := exec.Command(collectorBinary(t), "--config", config)
	cmd.Env = append(os.Environ(), env...)
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

// launchCollector writes cfg to dir/name.yaml and starts a collector with it, logging to
// dir/name.log; it returns once the collector listens for OTLP on otlpPort.
func launchCollector(t *testing.T, dir, name string, cfg collectorConfig, otlpPort int, env ...string) *collectorProcess {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("create collector directory: %v", err)
	}
	p := startCollector(t, cfg.write(t, filepath.Join(dir, name+".yaml")), filepath.Join(dir, name+".log"), env...)
	p.waitListening(t, otlpPort)
	return p
}

// startStormCollector launches the collector cfg describes, configured by
// dir/collector.yaml.
func startStormCollector(t *testing.T, dir string, cfg stormConfig, env ...string) *collectorProcess {
	t.Helper()
	return launchCollector(t, dir, "collector", cfg.collector(), cfg.OTLPPort, env...)
}

func (p *collectorProcess) log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(read collector log: %v)", err)
	}
	return string(b)
}

// alive fails the test when the collector has exited: what the test waits for will not come.
func (p *collectorProcess) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("collector exited: %v", p.waitErr)
	default:
	}
}

// aliveAll fails the test when one of the collectors has exited.
func aliveAll(t *testing.T, procs ...*collectorProcess) {
	t.Helper()
	for _, p := range procs {
		p.alive(t)
	}
}

// waitListening waits until the collector accepts connections on port: the OTLP receiver
// starts after the rest of the pipeline, so an open receiver port means a ready collector.
func (p *collectorProcess) waitListening(t *testing.T, port int) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, readyTimeout, "collector listening on "+addr, func() (bool, string) {
		p.alive(t)
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
}

// waitExit waits up to timeout for the collector to exit on its own and reports whether it
// did.
func (p *collectorProcess) waitExit(timeout time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// stop sends SIGTERM and waits for a clean exit: Shutdown is when retry_storm decides and
// flushes whatever it still buffers and the exporters drain their queues.
func (p *collectorProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("send SIGTERM to collector: %v", err)
	}
	if !p.waitExit(shutdownTimeout) {
		t.Fatalf("collector still running %s after SIGTERM", shutdownTimeout)
	}
	if p.waitErr != nil {
		t.Fatalf("collector exited with %v after SIGTERM", p.waitErr)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *collectorProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("send SIGKILL to collector: %v", err)
	}
	if !p.waitExit(shutdownTimeout) {
		t.Fatalf("collector still running %s after SIGKILL", shutdownTimeout)
	}
}

// runCollector runs the binary to completion (a subcommand: validate, components) from the
// repository root with env added to its environment, and returns its combined output and
// exit code.
func runCollector(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBinary(t), args...)
	cmd.Dir = repoRoot
	// What production.yaml requires from its environment; nothing here is contacted.
	cmd.Env = append(os.Environ(),
		"OTLP_BACKEND_ENDPOINT=backend.invalid:4317",
		"RETRYSTORM_HASH_KEY=e2e-not-a-secret",
		"RETRYSTORM_DATA_DIR="+t.TempDir(),
	)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exitErr) && ctx.Err() == nil:
		return string(out), exitErr.ExitCode()
	default:
		t.Fatalf("run %s %s: %v\n%s", cmd.Path, strings.Join(args, " "), err, out)
		return "", -1
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
