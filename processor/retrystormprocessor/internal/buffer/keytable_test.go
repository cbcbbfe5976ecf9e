package buffer

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
)

func TestCompactKeepsEveryAttributeInOrder(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr("gen_ai.tool.name", "lookup_order")
	m.PutInt("attempt", 2)
	m.PutEmptyMap("request").PutStr("order", "A-17")
	m.PutEmptySlice("tags").AppendEmpty().SetStr("x")
	m.PutBool("ok", true)
	want := pcommon.NewMap()
	m.CopyTo(want)

	newKeyTable().compact(m)

	require.True(t, want.Equal(m), "compaction changed the attributes: %v", m.AsRaw())
	var keys []string
	for k := range m.All() {
		keys = append(keys, k)
	}
	assert.Equal(t, []string{"gen_ai.tool.name", "attempt", "request", "tags", "ok"}, keys)
}

func TestCompactSharesKeysAcrossSpans(t *testing.T) {
	kt := newKeyTable()
	first, second := pcommon.NewMap(), pcommon.NewMap()
	// Separate allocations, as decoding makes them.
	first.PutStr(string([]byte("gen_ai.tool.name")), "a")
	second.PutStr(string([]byte("gen_ai.tool.name")), "b")
	kt.compact(first)
	kt.compact(second)
	keyData := func(m pcommon.Map) *byte {
		for k := range m.All() {
			return unsafe.StringData(k)
		}
		return nil
	}
	assert.Same(t, keyData(first), keyData(second))
	v, _ := second.Get("gen_ai.tool.name")
	assert.Equal(t, "b", v.Str())
}

func TestCompactLeavesDuplicateKeysAlone(t *testing.T) {
	// Two entries under one key cannot be built through Put*: decode them.
	td := traceWithDuplicateAttribute(t)
	attrs := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	require.Equal(t, 3, attrs.Len())
	newKeyTable().compact(attrs)
	assert.Equal(t, 3, attrs.Len(), "duplicates must not be merged")
	v, _ := attrs.Get("k")
	assert.Equal(t, "first", v.Str())
}

func TestKeyTableIsBounded(t *testing.T) {
	kt := newKeyTable()
	for i := range maxInternedKeys + 100 {
		m := pcommon.NewMap()
		m.PutStr(fmt.Sprintf("key.%d", i), "v")
		kt.compact(m)
	}
	long := pcommon.NewMap()
	long.PutStr(string(make([]byte, maxInternedKeyLen+1)), "v")
	kt.compact(long)
	assert.Len(t, kt.keys, maxInternedKeys)
	assert.Equal(t, 1, long.Len())
}

func traceWithDuplicateAttribute(t *testing.T) ptrace.Traces {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: []byte("0123456789abcdef"), SpanId: []byte("01234567"), Name: "dup",
			Attributes: []*commonpb.KeyValue{str("k", "first"), str("other", "x"), str("k", "second")},
		}}}},
	}}}
	raw, err := proto.Marshal(req)
	require.NoError(t, err)
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	return td
}

// TestOnlySpansThatMayWaitAreMadeCompact: a trace waiting for its root is held as it came
// for compactHold, then packed when it looks clean or, showing an error span, has its
// attributes compacted; a trace that arrives with its root is compacted on arrival only when
// root_grace is that long. (The rooted trace is a storm: a clean one is packed on its root's
// arrival, not compacted.)
func TestOnlySpansThatMayWaitAreMadeCompact(t *testing.T) {
	for _, grace := range []time.Duration{2 * time.Second, compactHold} {
		t.Run(grace.String(), func(t *testing.T) { checkCompaction(t, grace, grace >= compactHold) })
	}
}

func checkCompaction(t *testing.T, grace time.Duration, rootedCompacted bool) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.RootGrace = grace
	h := newHarness(t, cfg, nil)
	waiting, failing, whole := buffertest.TraceID(1), buffertest.TraceID(2), buffertest.TraceID(3)
	h.Consume(buffertest.WithoutRoot(buffertest.CleanTrace(waiting, "a")))
	h.Consume(buffertest.WithoutRoot(buffertest.ChargeCardTrace(failing, true)))
	h.Consume(buffertest.StormTrace(whole))
	h.CatchUp()

	sh := h.buffer.shards[0]
	interned := func(id pcommon.TraceID) (n, shared int) {
		t.Helper()
		pt, ok := sh.traces[id]
		require.True(t, ok, "the trace is buffered")
		n, shared = internedShare(sh, pt)
		require.Positive(t, n)
		return n, shared
	}
	for _, id := range []pcommon.TraceID{waiting, failing} {
		_, shared := interned(id)
		assert.Zero(t, shared, "a trace waiting for its root is held as it came at first")
		assert.Nil(t, sh.traces[id].packed)
	}
	n, shared := interned(whole)
	if rootedCompacted {
		assert.Equal(t, n, shared, "a long root_grace: the rooted trace is compacted on arrival")
	} else {
		assert.Zero(t, shared, "the trace that arrived with its root was not compacted")
	}

	h.Advance(compactHold)
	pt := sh.traces[waiting]
	require.NotNil(t, pt.packed, "clean-looking and still waiting for its root: packed")
	assert.Zero(t, pt.set.Len())
	assert.Equal(t, 1, pt.held())
	n, shared = interned(failing)
	assert.Equal(t, n, shared, "an error span: compacted, not packed")
	assert.Nil(t, sh.traces[failing].packed)
	h.Conservation()
}

// TestCompactLeavesHugeMapsAlone: a span with a hostile number of attributes is held as it
// came rather than rebuilt in quadratic time.
func TestCompactLeavesHugeMapsAlone(t *testing.T) {
	m := pcommon.NewMap()
	for i := range maxCompactedAttrs + 1 {
		m.PutStr(string(fmt.Appendf(nil, "k%d", i)), "v")
	}
	kt := newKeyTable()
	kt.compact(m)
	assert.Empty(t, kt.keys, "no key was interned")
	assert.Equal(t, maxCompactedAttrs+1, m.Len())
}
