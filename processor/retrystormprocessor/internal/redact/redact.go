// Package redact removes the raw payloads of a kept trace's tool attempts from every span
// that carries them: the tool spans' own payload attributes, the copies SDKs write into
// model and agent messages (replaced by a marker with the payload's hash), and, for shapes
// nobody listed, every verbatim occurrence of a payload value in the trace's strings.
package redact // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"

import (
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// Stats counts what was redacted, by where.
type Stats struct {
	// ToolSpan: payload attributes deleted from tool spans.
	ToolSpan int
	// IdempotencyKey: idempotency-key attributes deleted from other spans.
	IdempotencyKey int
	// Message: payloads (and, with KeepPromptText off, texts) replaced in message
	// attributes of spans.
	Message int
	// Event: the same in span events.
	Event int
	// Scrubbed: payload values replaced inside other strings.
	Scrubbed int
	// Unparseable: message attributes deleted whole because they did not parse.
	Unparseable int
	// Configured: attributes deleted by DeleteAttributes.
	Configured int
	// NotHunted: distinct payload values of at least MinValueLength left out of scrubbing
	// because the trace had more than MaxValues. Not a redaction: their copies outside tool
	// spans and message structures are not removed.
	NotHunted int
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.ToolSpan += o.ToolSpan
	s.IdempotencyKey += o.IdempotencyKey
	s.Message += o.Message
	s.Event += o.Event
	s.Scrubbed += o.Scrubbed
	s.Unparseable += o.Unparseable
	s.Configured += o.Configured
	s.NotHunted += o.NotHunted
}

// Redactor redacts the spans of one trace at a time. It holds a hasher and scratch space
// and is not safe for concurrent use: make one per goroutine.
type Redactor struct {
	payloadKeys payloadKeys
	sources     []payloadSource
	// kinds says which of the idempotency keys, message attributes and deletions a key is.
	kinds     keyKinds
	flattened []string
	events    map[string]bool
	minLen    int
	maxValues int
	rw        rewriter
	col       collector
	// followed is what ValueBuilder.Follow recorded for the trace being gathered.
	followed *Followed
	// deleteAt is scratch space: positions of the attributes of a map to delete.
	deleteAt []int
}

// New compiles a validated cfg for the tool payloads the attribute sources attributes
// read; key is the HMAC key of the markers' hashes (empty: SHA-256).
func New(cfg Config, attributes attrsource.Lists, key []byte) *Redactor {
	return newRedactor(cfg, payloadsOf(attributes), key)
}

func newRedactor(cfg Config, p payloads, key []byte) *Redactor {
	minLen := max(cfg.MinValueLength, 2) // the scan reads two-byte blocks
	maxValues := cfg.MaxHuntedValues
	if maxValues <= 0 {
		maxValues = DefaultMaxValues
	}
	return &Redactor{
		payloadKeys: newPayloadKeys(p.keys),
		sources:     parseSources(p.sources),
		kinds:       newKeyKinds(cfg.DeleteAttributes, p.idempotencyKeys, cfg.MessageAttributes),
		flattened:   cfg.FlattenedMessages,
		events:      set(cfg.MessageEvents...),
		minLen:      minLen,
		maxValues:   maxValues,
		rw:          rewriter{hasher: payload.NewHasher(key), keepText: cfg.KeepPromptText},
	}
}

// ToolSpan deletes a tool span's payload attributes (every copy of a repeated key, and
// flattened forms) and replaces the content of its message events, which is its own
// payload, by a marker with its hash.
func (r *Redactor) ToolSpan(span ptrace.Span, st *Stats) {
	span.Attributes().RemoveIf(func(k string, _ pcommon.Value) bool {
		if r.payloadKeys.has(k) {
			st.ToolSpan++
			return true
		}
		return false
	})
	for _, ev := range span.Events().All() {
		if !r.events[ev.Name()] {
			continue
		}
		for k, v := range ev.Attributes().All() {
			if eventPayloadMembers[k] && !(v.Type() == pcommon.ValueTypeStr && v.Str() == "") {
				v.SetStr(r.rw.markValue(v))
				st.ToolSpan++
			}
		}
	}
}

// Messages rewrites span's attributes keys as message structures (markers in place of
// tool payloads), before Span: attributes where following the model read a tool call or
// response, whatever their keys, so copies in message structures nobody listed are marked
// as the listed ones are. Span then scrubs them like any attribute.
func (r *Redactor) Messages(span ptrace.Span, keys []string, st *Stats) {
	for k, v := range span.Attributes().All() {
		if !slices.Contains(keys, k) || r.kinds.of(k)&kindMessage != 0 {
			continue
		}
		r.rw.replaced = 0
		if r.messageAttr(k, v) != messageUnparseable {
			st.Message += r.rw.replaced
		}
	}
}

// DeleteKeys deletes span's attributes keys, every copy of a repeated key: the raw payload
// of a tool span no rule names.
func (r *Redactor) DeleteKeys(span ptrace.Span, keys []string, st *Stats) {
	span.Attributes().RemoveIf(func(k string, _ pcommon.Value) bool {
		if slices.Contains(keys, k) {
			st.ToolSpan++
			return true
		}
		return false
	})
}

// Span redacts one span of a kept trace: idempotency keys, configured deletions, message
// attributes, flattened messages and message events, then scrubs every string left (name,
// status message, attributes, events, links) of vals. Each attribute map is read once.
func (r *Redactor) Span(span ptrace.Span, vals *Values, st *Stats) {
	st.Message += r.attributes(span.Attributes(), true, vals, st)
	if vals.Len() > 0 {
		if s, n := vals.Scrub(span.Name()); n > 0 {
			span.SetName(s)
			st.Scrubbed += n
		}
		if s, n := vals.Scrub(span.Status().Message()); n > 0 {
			span.Status().SetMessage(s)
			st.Scrubbed += n
		}
	}
	evs := span.Events()
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		ea := ev.Attributes()
		if ev.Name() == stormrecord.FindingEvent {
			continue // a finding: its kind, detail and call key are the analysis's words
		}
		if !r.events[ev.Name()] {
			st.Event += r.attributes(ea, false, vals, st)
		} else {
			// A message event: its attributes are one message, rewritten whole, then scrubbed.
			st.Event += r.attributes(ea, false, nil, st)
			ctx := ctxNone
			if strings.Contains(ev.Name(), "tool") {
				ctx = ctxToolText
			}
			r.rw.replaced = 0
			r.rw.object(ea, "", false, ctx, 0)
			st.Event += r.rw.replaced
			st.Scrubbed += scrubMap(ea, vals)
		}
		if vals.Len() > 0 {
			if s, n := vals.Scrub(ev.Name()); n > 0 {
				ev.SetName(s)
				st.Scrubbed += n
			}
		}
	}
	links := span.Links()
	for i := 0; i < links.Len(); i++ {
		r.attributes(links.At(i).Attributes(), false, vals, st)
	}
}

// attributes redacts one attribute map in one pass: deletes configured attributes (and
// idempotency keys when idem), rewrites message attributes and flattened messages, and
// scrubs every string but retry_storm's own annotations of vals. It returns the
// replacements made in messages.
func (r *Redactor) attributes(m pcommon.Map, idem bool, vals *Values, st *Stats) int {
	r.rw.replaced = 0
	deletes := r.deleteAt[:0]
	flattened := false
	at := -1
	for k, v := range m.All() {
		at++
		kind := r.kinds.of(k)
		switch {
		case kind&kindDelete != 0:
			st.Configured++
			deletes = append(deletes, at)
			continue
		case idem && kind&kindIdempotencyKey != 0:
			st.IdempotencyKey++
			deletes = append(deletes, at)
			continue
		case kind&kindMessage != 0:
			switch r.messageAttr(k, v) {
			case messageUnparseable:
				st.Unparseable++
				deletes = append(deletes, at)
				continue
			case messageJSON:
				// A message structure still parses once scrubbed.
				if out, n := scrubJSON(v.Str(), vals); n > 0 {
					v.SetStr(out)
					st.Scrubbed += n
				}
				continue
			}
		case r.isFlattened(k):
			// Scrubbed once rewritten: a marker hashes the part as it was.
			flattened = true
			continue
		}
		if vals.Len() > 0 && !stormrecord.Written(k) {
			st.Scrubbed += scrubValue(v, vals, 0)
		}
	}
	n := r.rw.replaced
	if flattened {
		n += r.flattenedMessages(m)
		if vals.Len() > 0 {
			for k, v := range m.All() {
				if r.isFlattened(k) {
					st.Scrubbed += scrubValue(v, vals, 0)
				}
			}
		}
	}
	if len(deletes) > 0 {
		at := -1
		m.RemoveIf(func(string, pcommon.Value) bool {
			at++
			if len(deletes) > 0 && deletes[0] == at {
				deletes = deletes[1:]
				return true
			}
			return false
		})
	}
	r.deleteAt = deletes[:0]
	return n
}

// messageAttr rewrites message attribute k in place and says what it held: a map or a
// list is rewritten in place and reads as text, left for scrubbing.
func (r *Redactor) messageAttr(k string, v pcommon.Value) messageRead {
	// The key's last segment names what the value holds (ai.response.toolCalls: calls).
	parentKey := k[strings.LastIndexByte(k, '.')+1:]
	if v.Type() != pcommon.ValueTypeStr {
		r.rw.value(v, parentKey, false, ctxNone, 0)
		return messageText
	}
	read := r.rw.str(v, parentKey, false, ctxNone, 0)
	if read == messageText && !r.rw.keepText && v.Str() != "" {
		// Plain text: a prompt or an answer.
		v.SetStr(Scrubbed)
		r.rw.replaced++
	}
	return read
}

// DefaultMinValueLength is the shortest payload value scrubbing hunts by default: long
// enough that words like "success" or "pending" are left alone, short enough for card and
// account numbers, IBANs, tokens and most e-mail addresses.
const DefaultMinValueLength = 8

// DefaultMaxValues is the most distinct payload values scrubbing hunts in one trace by
// default. In BenchmarkHuntedValues (search results: ids, titles, URLs, addresses, about
// 2.3 forms a value) redacting a trace of 2048 values costs about 1.3 times a byte what
// one of 256 does (5.3 ns against 4.0), less than 512 cost before values sharing their
// first bytes stopped being compared one by one; the scan itself no longer grows with the
// count (BenchmarkScrubText), what does is gathering the values. 4096 would cost 1.5 times;
// a kept decision remembers 24 bytes a form, about 110 KB for a trace at this limit.
const DefaultMaxValues = 2048
