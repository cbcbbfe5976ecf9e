package attemptlog

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

var pythonFiles = flag.Int("attemptlog.files", 300, "generated inputs TestMatchesPythonScript compares with the Python script")

// runScript runs the per-attempt scanner (testdata/retry_storm.py) on input and returns its stdout; ok is false when it
// exits with an error (a traceback on stderr).
func runScript(t *testing.T, python string, input []byte) (stdout []byte, ok bool) {
	t.Helper()
	// -S skips site-packages, a third of the start-up time; the script needs only the stdlib.
	cmd := exec.Command(python, "-S", "testdata/retry_storm.py")
	cmd.Stdin = bytes.NewReader(input)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	// Pin what the environment could change: strict UTF-8 on stdin, the default int limit.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PYTHON") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PYTHONIOENCODING=utf-8:strict", "PYTHONINTMAXSTRDIGITS=4300", "PYTHONDONTWRITEBYTECODE=1")
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), true
	case errors.As(err, &exit):
		if !strings.Contains(stderr.String(), "Traceback") {
			t.Fatalf("the script failed without a traceback: %v\n%s", err, stderr.String())
		}
		return out.Bytes(), false
	default:
		t.Fatalf("run %s testdata/retry_storm.py: %v", python, err)
		return nil, false
	}
}

func lookPython(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH; it is needed to compare with the per-attempt scanner script (testdata/retry_storm.py): run `bash .ci/ensure-python3` or install python3: %v", err)
	}
	// A version manager's shim can cost more than the script itself; run the interpreter.
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("run %s: %v", python, err)
	}
	if exe := strings.TrimSpace(string(out)); exe != "" {
		python = exe
	}
	return python
}

// keepInput writes a failing input where it outlives the test, and names it.
func keepInput(t *testing.T, i int, input []byte) string {
	f, err := os.CreateTemp("", fmt.Sprintf("attemptlog-%d-*.jsonl", i))
	if err != nil {
		return fmt.Sprintf("input: %q", input)
	}
	defer f.Close()
	if _, err := f.Write(input); err != nil {
		t.Logf("keep input: %v", err)
	}
	return "input: " + f.Name()
}

// TestMatchesPythonScript compares the Go report with the script's stdout byte for byte on
// generated inputs. Where the package reports lines the script would crash on, the script
// must crash on the input, and print the Go report once those lines are removed.
func TestMatchesPythonScript(t *testing.T) {
	python := lookPython(t)
	t.Run("labeled example", func(t *testing.T) {
		want, ok := runScript(t, python, []byte(example))
		if !ok || string(want) != exampleReport {
			t.Fatalf("the script printed\n%s\nnot the report TestLabeledExample expects", want)
		}
	})
	g := attemptLogInput{r: rand.New(rand.NewPCG(22, 0x5eed)), crashes: true}
	inputs := make([][]byte, *pythonFiles)
	for i := range inputs {
		inputs[i] = g.file()
	}
	var clean, crashed, storms20 atomic.Int64
	t.Run("files", func(t *testing.T) {
		for i, input := range inputs {
			t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
				t.Parallel()
				kind := compareWithScript(t, python, i, input)
				if kind&fileCrashed != 0 {
					crashed.Add(1)
				} else {
					clean.Add(1)
				}
				if kind&fileManyStorms != 0 {
					storms20.Add(1)
				}
			})
		}
	})
	n := int64(*pythonFiles)
	t.Logf("%d files: %d without crashes, %d with lines left out, %d with more than %d storms", n, clean.Load(), crashed.Load(), storms20.Load(), topStorms)
	if n >= 100 && (clean.Load() < n/2 || crashed.Load() < n/10 || storms20.Load() < n/10) {
		t.Errorf("the generator no longer covers the cases")
	}
}

const (
	fileClean = 1 << iota
	fileCrashed
	fileManyStorms
)

// compareWithScript checks one input against the script and says what kind of input it was.
func compareWithScript(t *testing.T, python string, i int, input []byte) int {
	original := input
	got := scanInput(t, input, 2)
	crashLines := got.crashLines()
	want, ok := runScript(t, python, input)
	kind := fileClean
	if len(crashLines) > 0 {
		if ok {
			t.Fatalf("file %d: the package reports crashes on lines %v, but the script printed a report\n%s", i, keys(crashLines), keepInput(t, i, input))
		}
		kind = fileCrashed
		var kept bytes.Buffer
		for n, line := range splitKeepingEnds(input) {
			if !crashLines[int64(n+1)] {
				kept.Write(line)
			}
		}
		input = kept.Bytes()
		if want, ok = runScript(t, python, input); !ok {
			t.Fatalf("file %d: the script still crashes without lines %v\n%s", i, keys(crashLines), keepInput(t, i, original))
		}
	} else if !ok {
		t.Fatalf("file %d: the script crashed where the package reports no crash (line errors %v)\n%s", i, got.lineErrs, keepInput(t, i, input))
	}
	if got.json != string(want) {
		t.Fatalf("file %d: report differs from the script's at %s\n%s (lines left out: %v)", i, firstDifference(got.json, string(want)), keepInput(t, i, original), keys(crashLines))
	}
	if got.report.StormSpans > topStorms {
		kind |= fileManyStorms
	}
	return kind
}

func keys(m map[int64]bool) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	return out
}

func firstDifference(got, want string) string {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("line %d: got %q, the script printed %q", i+1, g, w)
		}
	}
	return "no line (length differs)"
}
