package main

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestParseLevels(t *testing.T) {
	got, err := parseLevels("1000, 100000,1000000")
	if err != nil || !reflect.DeepEqual(got, []int{1000, 100000, 1000000}) {
		t.Fatalf("parseLevels = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1k", "0", "-5", "10,,20"} {
		if _, err := parseLevels(bad); err == nil {
			t.Fatalf("parseLevels(%q) accepted", bad)
		}
	}
}

func TestBadArgumentsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--buffered", "lots"},
		{"e2e", "--rates", "fast"},
		{"e2e", "--no-such-flag"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Fatalf("%v: exit %d, want 2 (stderr %q)", args, code, errOut.String())
		}
	}
}

func TestUnknownCheckFails(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--checks", "bogus"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "unknown check") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestScanAttemptLogSize: --attempt-log-mib sizes the per-attempt input, and --seed-mib,
// its deprecated name, still does.
func TestScanAttemptLogSize(t *testing.T) {
	for _, name := range []string{"--attempt-log-mib", "--seed-mib"} {
		var errOut bytes.Buffer
		o, code, ok := parseScanArgs([]string{name, "3"}, &errOut)
		if !ok || code != 0 || o.AttemptLogBytes != 3<<20 {
			t.Fatalf("%s 3: ok %v, code %d, %d bytes (stderr %q)", name, ok, code, o.AttemptLogBytes, errOut.String())
		}
	}
}
