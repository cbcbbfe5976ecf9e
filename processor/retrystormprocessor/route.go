package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// piece holds spans of one trace, with their resource and scope, cut from one batch.
type piece struct {
	id pcommon.TraceID
	td ptrace.Traces
}

// route cuts td into one piece per trace and groups the pieces by owning shard. It moves
// spans out of td (the processor declares MutatesData, so td is its own).
func route(td ptrace.Traces, shards int) [][]piece {
	out := make([][]piece, shards)
	for _, pc := range splitByTrace(td) {
		i := shardOf(pc.id, shards)
		out[i] = append(out[i], pc)
	}
	return out
}

// splitByTrace moves whole resources or scopes when they hold one trace (the common case for
// agent SDKs) and single spans otherwise.
func splitByTrace(td ptrace.Traces) []piece {
	var pieces []piece
	index := map[pcommon.TraceID]int{}
	pieceFor := func(id pcommon.TraceID) ptrace.Traces {
		if i, ok := index[id]; ok {
			return pieces[i].td
		}
		index[id] = len(pieces)
		pieces = append(pieces, piece{id: id, td: ptrace.NewTraces()})
		return pieces[len(pieces)-1].td
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		if id, ok := soleTraceOfResource(rs); ok {
			rs.MoveTo(pieceFor(id).ResourceSpans().AppendEmpty())
			continue
		}
		splitResource(rs, pieceFor)
	}
	return pieces
}

func splitResource(rs ptrace.ResourceSpans, pieceFor func(pcommon.TraceID) ptrace.Traces) {
	dest := map[pcommon.TraceID]ptrace.ResourceSpans{}
	resourceFor := func(id pcommon.TraceID) ptrace.ResourceSpans {
		drs, ok := dest[id]
		if !ok {
			drs = pieceFor(id).ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(drs.Resource())
			drs.SetSchemaUrl(rs.SchemaUrl())
			dest[id] = drs
		}
		return drs
	}
	sss := rs.ScopeSpans()
	for j := 0; j < sss.Len(); j++ {
		ss := sss.At(j)
		if id, ok := soleTraceOfScope(ss); ok {
			ss.MoveTo(resourceFor(id).ScopeSpans().AppendEmpty())
			continue
		}
		scopes := map[pcommon.TraceID]ptrace.SpanSlice{}
		spans := ss.Spans()
		// SDKs export trace after trace: look the destination up once per run of one trace.
		var lastID pcommon.TraceID
		var last ptrace.SpanSlice
		for k := 0; k < spans.Len(); k++ {
			span := spans.At(k)
			if id := span.TraceID(); k == 0 || id != lastID {
				ds, ok := scopes[id]
				if !ok {
					scope := resourceFor(id).ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(scope.Scope())
					scope.SetSchemaUrl(ss.SchemaUrl())
					ds = scope.Spans()
					scopes[id] = ds
				}
				lastID, last = id, ds
			}
			span.MoveTo(last.AppendEmpty())
		}
	}
}

func soleTraceOfResource(rs ptrace.ResourceSpans) (pcommon.TraceID, bool) {
	var id pcommon.TraceID
	seen := false
	sss := rs.ScopeSpans()
	for j := 0; j < sss.Len(); j++ {
		spans := sss.At(j).Spans()
		for k := 0; k < spans.Len(); k++ {
			t := spans.At(k).TraceID()
			if seen && t != id {
				return id, false
			}
			id, seen = t, true
		}
	}
	return id, seen
}

func soleTraceOfScope(ss ptrace.ScopeSpans) (pcommon.TraceID, bool) {
	var id pcommon.TraceID
	spans := ss.Spans()
	for k := 0; k < spans.Len(); k++ {
		t := spans.At(k).TraceID()
		if k > 0 && t != id {
			return id, false
		}
		id = t
	}
	return id, spans.Len() > 0
}

// shardOf mixes both halves of the id, so ids with a constant half still spread.
func shardOf(id pcommon.TraceID, shards int) int {
	h := binary.LittleEndian.Uint64(id[:8]) ^ binary.LittleEndian.Uint64(id[8:])
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return int(h % uint64(shards))
}
