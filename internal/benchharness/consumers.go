package benchharness

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// holder holds every request it consumes until shutdown, decoded or (pack) encoded as OTLP,
// and does nothing else: the floors of a tail sampler, which must hold what it buffers.
type holder struct {
	pack    bool
	mu      sync.Mutex
	decoded []ptrace.Traces
	encoded [][]byte
	m       ptrace.ProtoMarshaler
}

var _ consumer.Traces = (*holder)(nil)

func (h *holder) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (h *holder) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pack {
		h.decoded = append(h.decoded, td)
		return nil
	}
	b, err := h.m.MarshalTraces(td)
	if err != nil {
		return err
	}
	h.encoded = append(h.encoded, b)
	return nil
}

// release lets go of what is held, as a tail sampler's shutdown does.
func (h *holder) release(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.decoded, h.encoded = nil, nil
	return nil
}

// floor reads every span and every attribute once (ids, name, times, status, every key and
// value, nested maps and slices included) and keeps nothing: the cost of looking at the
// data at all, with which every processor starts.
type floor struct {
	sum   uint64
	spans int64
}

var _ consumer.Traces = (*floor)(nil)

func (f *floor) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (f *floor) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		f.touchMap(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			f.sum += uint64(len(ss.Scope().Name()))
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				f.touchSpan(spans.At(k))
			}
		}
	}
	return nil
}

func (f *floor) touchSpan(s ptrace.Span) {
	f.spans++
	tid, sid, pid := s.TraceID(), s.SpanID(), s.ParentSpanID()
	f.sum += uint64(tid[15]) + uint64(sid[7]) + uint64(pid[7]) + uint64(s.StartTimestamp()) +
		uint64(s.EndTimestamp()) + uint64(s.Kind()) + uint64(s.Status().Code()) +
		uint64(len(s.Name())) + uint64(len(s.Status().Message())) + uint64(len(s.TraceState().AsRaw()))
	f.touchMap(s.Attributes())
	events := s.Events()
	for i := 0; i < events.Len(); i++ {
		f.sum += uint64(len(events.At(i).Name()))
		f.touchMap(events.At(i).Attributes())
	}
	links := s.Links()
	for i := 0; i < links.Len(); i++ {
		f.touchMap(links.At(i).Attributes())
	}
}

func (f *floor) touchMap(m pcommon.Map) {
	for k, v := range m.All() {
		f.sum += uint64(len(k))
		f.touchValue(v)
	}
}

func (f *floor) touchValue(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if s := v.Str(); s != "" {
			f.sum += uint64(len(s)) + uint64(s[0])
		}
	case pcommon.ValueTypeInt:
		f.sum += uint64(v.Int())
	case pcommon.ValueTypeDouble:
		f.sum += uint64(v.Double())
	case pcommon.ValueTypeBool:
		if v.Bool() {
			f.sum++
		}
	case pcommon.ValueTypeMap:
		f.touchMap(v.Map())
	case pcommon.ValueTypeSlice:
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			f.touchValue(sl.At(i))
		}
	case pcommon.ValueTypeBytes:
		f.sum += uint64(v.Bytes().Len())
	}
}

// sink is the next consumer of the processors under test: it counts what they forward and
// when each trace was first forwarded, and drops the data.
type sink struct {
	w     *Workload
	start time.Time

	mu        sync.Mutex
	spans     int64
	forwarded []time.Duration // per trace, since start; 0 = not forwarded
	traces    int
	unknown   int64
}

var _ consumer.Traces = (*sink)(nil)

func newSink(w *Workload, start time.Time) *sink {
	return &sink{w: w, start: start, forwarded: make([]time.Duration, w.Traces())}
}

func (s *sink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *sink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	at := time.Since(s.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans += int64(td.SpanCount())
	var last pcommon.TraceID
	for _, span := range tracespans.All(td) {
		if id := span.TraceID(); id != last {
			last = id
			s.mark(id, at)
		}
	}
	return nil
}

func (s *sink) mark(id pcommon.TraceID, at time.Duration) {
	i, ok := s.w.trace(id)
	if !ok {
		s.unknown++
		return
	}
	if s.forwarded[i] == 0 {
		s.forwarded[i] = max(at, 1)
		s.traces++
	}
}

// counts returns the spans and distinct traces forwarded so far.
func (s *sink) counts() (spans int64, traces int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spans, s.traces
}
