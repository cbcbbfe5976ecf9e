package stormscan

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// countingReader counts the bytes read from an input (before decompression) for the
// summary and the progress line. It may be read on a decompressor's goroutine: the count
// is atomic.
type countingReader struct {
	r        io.Reader
	progress *progress
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.progress.read.Add(int64(n))
	return n, err
}

// progress prints, once a second, the bytes read of the total and the traces decided, on
// one line of stderr, when stderr is a terminal; otherwise it is silent.
type progress struct {
	out     io.Writer
	total   int64 // sum of the regular files' sizes; 0 when unknown (stdin)
	read    atomic.Int64
	engine  *engine
	done    chan struct{}
	stopped sync.WaitGroup
	mu      sync.Mutex
	shown   bool
}

func newProgress(files []string, stderr io.Writer, eng *engine) *progress {
	p := &progress{out: stderr, engine: eng}
	if !isTerminal(stderr) {
		return p
	}
	for _, name := range files {
		if info, err := os.Stat(name); err == nil && info.Mode().IsRegular() {
			p.total += info.Size()
		}
	}
	p.done = make(chan struct{})
	p.stopped.Add(1)
	go p.loop()
	return p
}

// isTerminal reports whether w is a terminal (not merely a character device: /dev/null is
// one too).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func (p *progress) loop() {
	defer p.stopped.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			p.print()
		}
	}
}

func (p *progress) print() {
	var decided int64
	if p.engine != nil {
		c, err := p.engine.counts(context.Background())
		if err != nil {
			return
		}
		decided = c.traces["kept"] + c.traces["dropped"]
	}
	read := p.read.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total > 0 {
		fmt.Fprintf(p.out, "\rscan: %s of %s read (%d%%), %d traces decided ", mib(read), mib(p.total), read*100/max(p.total, 1), decided)
	} else {
		fmt.Fprintf(p.out, "\rscan: %s read, %d traces decided ", mib(read), decided)
	}
	p.shown = true
}

// clear ends the progress line before another message is printed.
func (p *progress) clear() {
	if p == nil || p.done == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
}

func (p *progress) stop() {
	if p.done == nil {
		return
	}
	close(p.done)
	p.stopped.Wait()
	p.clear()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
