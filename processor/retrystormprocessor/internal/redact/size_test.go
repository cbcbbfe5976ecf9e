package redact

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Bytes covers what a trace's values take once a decision cache holds them, unindexed:
// a tool result of 2,048 values with spaces, each hunted in three forms.
func TestBytesCoversTheValuesHeld(t *testing.T) {
	tool := ptrace.NewSpan()
	tool.SetName("execute_tool read_ledger")
	var rows []string
	for i := range 2048 {
		rows = append(rows, fmt.Sprintf("%q", fmt.Sprintf("entry %04d of the ledger", i)))
	}
	tool.Attributes().PutStr("gen_ai.tool.call.result", "["+strings.Join(rows, ",")+"]")
	r := testConfig().new()
	const n = 50
	held := make([]*Values, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range held {
		b := r.Values()
		b.Add(tool)
		var st Stats
		held[i] = b.Done(&st).Unindexed()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d values: %d bytes of heap each set, Bytes %d", held[0].values, per, held[0].Bytes())
	if held[0].values != 2048 || held[0].Bytes() < per {
		t.Errorf("Bytes %d of %d values, under the %d bytes each set takes", held[0].Bytes(), held[0].values, per)
	}
	if held[0].Bytes() > per*5/4 {
		t.Errorf("Bytes %d is far over the %d bytes each set takes", held[0].Bytes(), per)
	}
	var nilValues *Values
	if nilValues.Bytes() != 0 {
		t.Error("no values take no bytes")
	}
}
