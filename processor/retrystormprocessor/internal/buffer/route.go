package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"encoding/binary"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
)

// piece holds the spans of one trace that one request brought, where the request left
// them (spanSet).
type piece struct {
	id  pcommon.TraceID
	set spanSet
}

// route cuts td into one piece per trace and groups the pieces by owning shard, with the
// client annotations in taken out and counted in c. The pieces hold td's spans (the
// processor declares MutatesData, so td is its own).
func route(td ptrace.Traces, shards int, in *inbound.Filter, c *inbound.Counts) [][]piece {
	out := make([][]piece, shards)
	for _, pc := range splitByTrace(td, in, c) {
		i := shardOf(pc.id, shards)
		out[i] = append(out[i], pc)
	}
	return out
}

// splitByTrace gives each trace of td the handles of its spans, one part per scope it has
// spans in, without moving a span. Resources and scopes are copied once per request. With
// in, the client annotations of the spans, resources and scopes are taken out on the way
// (each span is met here anyway) and counted in c.
func splitByTrace(td ptrace.Traces, in *inbound.Filter, c *inbound.Counts) []piece {
	var sizer ptrace.ProtoMarshaler
	var pieces []piece
	index := map[pcommon.TraceID]int{}
	var runs []run
	for _, rs := range td.ResourceSpans().All() {
		var res *resourceOrigin
		for _, ss := range rs.ScopeSpans().All() {
			spans := ss.Spans()
			if spans.Len() == 0 {
				continue
			}
			if res == nil {
				if in != nil {
					c.Resource += in.Map(rs.Resource().Attributes())
				}
				res = newResourceOrigin(rs, &sizer)
			}
			if in != nil {
				c.Scope += in.Map(ss.Scope().Attributes())
			}
			o := newOrigin(res, ss, &sizer)
			// SDKs export trace after trace: look each trace up once per run, and size
			// its part once.
			runs = appendRuns(runs[:0], spans)
			for _, r := range runs {
				i, ok := index[r.id]
				if !ok {
					i = len(pieces)
					index[r.id] = i
					pieces = append(pieces, piece{id: r.id})
				}
				set := &pieces[i].set
				if n := len(set.parts); n == 0 || set.parts[n-1].origin != o {
					set.parts = append(set.parts, part{origin: o})
				}
				p := &set.parts[len(set.parts)-1]
				p.spans = slices.Grow(p.spans, r.n)
				for k := r.start; k < r.start+r.n; k++ {
					span := spans.At(k)
					if in != nil {
						in.Span(span, c)
					}
					p.spans = append(p.spans, span)
				}
				set.n += r.n
			}
		}
	}
	return pieces
}

// run is a stretch of consecutive spans of one trace in a span slice.
type run struct {
	id       pcommon.TraceID
	start, n int
}

func appendRuns(runs []run, spans ptrace.SpanSlice) []run {
	for k := 0; k < spans.Len(); k++ {
		id := spans.At(k).TraceID()
		if n := len(runs); n > 0 && runs[n-1].id == id {
			runs[n-1].n++
			continue
		}
		runs = append(runs, run{id: id, start: k, n: 1})
	}
	return runs
}

// shardOf mixes both halves of the id, so ids with a constant half still spread.
func shardOf(id pcommon.TraceID, shards int) int {
	h := binary.LittleEndian.Uint64(id[:8]) ^ binary.LittleEndian.Uint64(id[8:])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return int(h % uint64(shards))
}
