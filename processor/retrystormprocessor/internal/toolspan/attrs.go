package toolspan

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// attrs reads one span's attributes by source. A tool span is read for some forty
// sources; indexed, its attributes are walked once (one map lookup per attribute) instead
// of once per source.
type attrs struct {
	m  pcommon.Map
	ix *attrIndex // nil: each read scans m
	// events are the span's events, read by event sources.
	events ptrace.SpanEventSlice
}

// spanAttrs reads span's attributes and events without an index.
func spanAttrs(span ptrace.Span) attrs {
	return attrs{m: span.Attributes(), events: span.Events()}
}

func (a attrs) get(src source) (pcommon.Value, bool) {
	if src.Event != "" {
		return eventAttr(a.events, src.Event, src.Key)
	}
	if a.ix != nil {
		return a.ix.get(src.id)
	}
	return a.m.Get(src.Key)
}

// attrIndex holds, for the span last loaded, the value of every attribute key a source
// reads. It belongs to one Extractor.
type attrIndex struct {
	ids  map[string]int32
	vals []pcommon.Value
	// gen[id] == cur marks vals[id] as loaded for the current span.
	gen []uint32
	cur uint32
}

// register returns the id of key, adding it.
func (ix *attrIndex) register(key string) int32 {
	if id, ok := ix.ids[key]; ok {
		return id
	}
	id := int32(len(ix.vals))
	ix.ids[key] = id
	ix.vals = append(ix.vals, pcommon.Value{})
	ix.gen = append(ix.gen, 0)
	return id
}

// eventAttr reads attribute key of the first event called name that carries it.
func eventAttr(events ptrace.SpanEventSlice, name, key string) (pcommon.Value, bool) {
	for i := 0; i < events.Len(); i++ {
		ev := events.At(i)
		if ev.Name() != name {
			continue
		}
		if v, ok := ev.Attributes().Get(key); ok {
			return v, true
		}
	}
	return pcommon.Value{}, false
}

// load indexes span's attributes. Of a key repeated in them (invalid OTLP) the first
// value wins, as with pcommon.Map.Get.
func (ix *attrIndex) load(span ptrace.Span) attrs {
	m := span.Attributes()
	ix.cur++
	if ix.cur == 0 { // wrapped: forget every mark
		clear(ix.gen)
		ix.cur = 1
	}
	for k, v := range m.All() {
		if id, ok := ix.ids[k]; ok && ix.gen[id] != ix.cur {
			ix.gen[id], ix.vals[id] = ix.cur, v
		}
	}
	return attrs{m: m, ix: ix, events: span.Events()}
}

func (ix *attrIndex) get(id int32) (pcommon.Value, bool) {
	if ix.gen[id] != ix.cur {
		return pcommon.Value{}, false
	}
	return ix.vals[id], true
}
