// Package inbound takes out of arriving spans what is written in retry_storm's name, before
// anything reads them: attributes under its namespace (retrystorm.) that a client set on
// spans, events, links, resources or scopes, and span and event names under it. Whatever
// reaches the storm_summary exporter and the storms connector under that namespace is then
// the processor's own.
package inbound // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

// RenamePrefix is put before a span or event name that arrived under the namespace, so
// that it stays readable but is no longer the processor's (a client's
// retrystorm.late_finding span becomes client.retrystorm.late_finding).
const RenamePrefix = "client."

// Counts are the client annotations taken out, by where they were.
type Counts struct {
	// Span, Event, Link, Resource and Scope count attributes removed.
	Span, Event, Link, Resource, Scope int64
	// SpanName and EventName count names renamed.
	SpanName, EventName int64
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Span += o.Span
	c.Event += o.Event
	c.Link += o.Link
	c.Resource += o.Resource
	c.Scope += o.Scope
	c.SpanName += o.SpanName
	c.EventName += o.EventName
}

// Filter removes client annotations. The attributes under the namespace that the
// configuration reads from clients (divergence.caveat_attribute and the like, by default
// retrystorm.answer.caveat, retrystorm.answer.cited_assets and retrystorm.read.asset) are
// input, not annotations, and stay.
type Filter struct {
	inputs map[string]struct{}
}

// New returns a Filter keeping inputs; configuration validation makes sure none is an
// attribute the processor writes.
func New(inputs []string) *Filter {
	f := &Filter{inputs: map[string]struct{}{}}
	for _, k := range inputs {
		if strings.HasPrefix(k, stormrecord.Prefix) {
			f.inputs[k] = struct{}{}
		}
	}
	return f
}

// Map removes m's client annotations and returns how many.
func (f *Filter) Map(m pcommon.Map) int64 {
	found := false
	for k := range m.All() {
		if f.annotation(k) {
			found = true
			break
		}
	}
	if !found {
		return 0
	}
	var n int64
	m.RemoveIf(func(k string, _ pcommon.Value) bool {
		if f.annotation(k) {
			n++
			return true
		}
		return false
	})
	return n
}

// Span removes the client annotations of span, its events and links, and renames a span
// or event named under the namespace.
func (f *Filter) Span(span ptrace.Span, c *Counts) {
	c.Span += f.Map(span.Attributes())
	if name := span.Name(); underPrefix(name) {
		span.SetName(RenamePrefix + name)
		c.SpanName++
	}
	for _, ev := range span.Events().All() {
		c.Event += f.Map(ev.Attributes())
		if name := ev.Name(); underPrefix(name) {
			ev.SetName(RenamePrefix + name)
			c.EventName++
		}
	}
	for _, l := range span.Links().All() {
		c.Link += f.Map(l.Attributes())
	}
}

func (f *Filter) annotation(k string) bool {
	if !underPrefix(k) {
		return false
	}
	_, input := f.inputs[k]
	return !input
}

// underPrefix is strings.HasPrefix(s, stormrecord.Prefix), first byte first: nearly every
// key and name a span carries is told apart there, without a call.
func underPrefix(s string) bool {
	return len(s) >= len(stormrecord.Prefix) && s[0] == stormrecord.Prefix[0] && s[:len(stormrecord.Prefix)] == stormrecord.Prefix
}
