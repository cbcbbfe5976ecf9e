//go:build e2e

package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildAgentsim builds cmd/agentsim into dir once per test: running the binary avoids a
// `go run` compile inside the measured part of the test.
func buildAgentsim(t *testing.T, dir string) string { return buildCommand(t, dir, "agentsim") }

// buildCommand builds cmd/name into dir and returns the binary's path.
func buildCommand(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// agentsimRun is agentsim running in the background.
type agentsimRun struct {
	cmd            *exec.Cmd
	args           []string
	stdout, stderr bytes.Buffer
	done           chan error
	exited         chan struct{}
}

// startAgentsim starts agentsim; wait collects it. It is killed at cleanup if still
// running.
func startAgentsim(t *testing.T, bin string, args ...string) *agentsimRun {
	t.Helper()
	r := &agentsimRun{args: args, done: make(chan error, 1), exited: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start agentsim: %v", err)
	}
	go func() {
		r.done <- r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

// wait waits for agentsim to exit and fails the test unless every span was exported; it
// returns agentsim's stdout.
func (r *agentsimRun) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("agentsim %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), err,
				tail(r.stdout.String(), 30), r.stderr.String())
		}
	case <-time.After(agentsimTimeout):
		_ = r.cmd.Process.Kill()
		<-r.exited
		t.Fatalf("agentsim still running after %s", agentsimTimeout)
	}
	return r.stdout.String()
}

// runAgentsim runs agentsim to completion and returns its stdout.
func runAgentsim(t *testing.T, bin string, args ...string) string {
	t.Helper()
	return startAgentsim(t, bin, args...).wait(t)
}
