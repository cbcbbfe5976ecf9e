//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// What the reliability tests read of the collector's process and do to its filesystem:
// resident memory from /proc, and a tmpfs to turn read-only or fill up.

// procStatusKB reads a kB field (VmRSS, VmHWM) of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse %s in /proc/%d/status: %q", field, pid, line)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// rssSampler records the highest VmRSS seen while it runs (VmHWM gives the peak too; the
// samples show how it moved).
type rssSampler struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []int64
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err == nil {
				for line := range strings.Lines(string(raw)) {
					if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
						v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
						s.mu.Lock()
						s.samples = append(s.samples, v)
						s.mu.Unlock()
					}
				}
			}
			select {
			case <-s.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) finish() (maxKB int64, n int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.samples {
		maxKB = max(maxKB, v)
	}
	return maxKB, len(s.samples)
}

// mountTmpfs mounts a tmpfs of sizeKB on a new directory under dir and unmounts it at
// cleanup. CI runs as root on this machine type: a refused mount fails the test (it must
// not silently skip the filesystem faults).
func mountTmpfs(t *testing.T, dir string, sizeKB int) string {
	t.Helper()
	mnt := filepath.Join(dir, "tmpfs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatalf("create mount point: %v", err)
	}
	opts := fmt.Sprintf("size=%dk,mode=0700", sizeKB)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		t.Fatalf("mount a %d KiB tmpfs on %s: %v — the filesystem fault tests need root (CAP_SYS_ADMIN), as CI has on this machine type", sizeKB, mnt, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			// The collector may still hold a file: detach so the test directory can go.
			if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount tmpfs %s: %v", mnt, err)
			}
		}
	})
	return mnt
}

// remountTmpfs switches the tmpfs read-only or back to read-write.
func remountTmpfs(t *testing.T, mnt string, readOnly bool, sizeKB int) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_NOSUID | syscall.MS_NODEV)
	if readOnly {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", flags, fmt.Sprintf("size=%dk,mode=0700", sizeKB)); err != nil {
		t.Fatalf("remount tmpfs %s (read-only %v): %v", mnt, readOnly, err)
	}
}

// fillFilesystem writes a file under dir until the filesystem is full and returns its path.
func fillFilesystem(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatalf("create filler: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for range 1 << 20 {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatalf("fill filesystem: %v", err)
		}
	}
	t.Fatalf("filesystem under %s never filled up", dir)
	return ""
}
