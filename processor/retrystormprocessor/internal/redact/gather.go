package redact

import (
	"slices"
	"strings"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/messages"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Values starts a trace (or a batch of its late spans): it gathers the payload values of
// its tool spans; call Add for each, then Done.
func (r *Redactor) Values() ValueBuilder {
	r.col.reset(r.minLen, r.maxValues)
	r.rw.reset()
	r.followed = nil
	return ValueBuilder{r: r}
}

// ValueBuilder gathers the payload values of one trace's tool spans.
type ValueBuilder struct{ r *Redactor }

// Add gathers the payload values a tool span carries: its payload attributes, and the
// content of its message events (Strands records a tool's arguments and result only there).
func (b ValueBuilder) Add(span ptrace.Span) {
	r := b.r
	for k, v := range span.Attributes().All() {
		if !r.payloadKeys.has(k) {
			continue
		}
		for _, src := range r.sources {
			switch reads, whole := src.reads(k); {
			case !reads:
			case whole:
				r.addPayload(k, v)
			default:
				for el := range src.read(k, v) {
					r.addPayload(k, el)
				}
			}
		}
	}
	for _, ev := range span.Events().All() {
		if !r.events[ev.Name()] {
			continue
		}
		for k, v := range ev.Attributes().All() {
			if eventPayloadMembers[k] {
				r.addPayload(k, v)
			}
		}
	}
}

// AddKeys gathers the payload values of span's attributes keys: the raw payload of a tool
// span no rule names, which following the model found (its keys named by their roles).
func (b ValueBuilder) AddKeys(span ptrace.Span, keys []string) {
	for k, v := range span.Attributes().All() {
		if slices.Contains(keys, k) {
			b.r.addPayload(k, v)
		}
	}
}

// AddModelPayload gathers the values of a payload known from the model's side of a call,
// the arguments of its request or the content of its response (JSON text): they are
// hunted like a tool span's own, wherever the span that executed the call was found or not.
// A response is often a list of content parts ([{"type":"input_text","text":…}]): the
// parts' type tags, ids and names are the vocabulary's, not the tool's, and stay readable.
func (b ValueBuilder) AddModelPayload(text string) {
	r := b.r
	if !r.col.firstRead(text) {
		return
	}
	doc := strings.TrimSpace(text)
	if !payload.LooksLikeJSONContainer(doc) || !gjson.Valid(doc) {
		r.col.addText(text, 0)
		return
	}
	r.addUntagged(gjson.Parse(doc), "", 0)
}

// addUntagged adds the leaves of v but those of the members that tag a content part.
func (r *Redactor) addUntagged(v gjson.Result, key string, depth int) {
	if depth > maxDepth {
		return
	}
	switch {
	case v.IsObject() || v.IsArray():
		v.ForEach(func(k, el gjson.Result) bool {
			r.addUntagged(el, k.Str, depth+1)
			return true
		})
	case v.Type == gjson.String:
		if !partTag(key) {
			r.col.addText(v.Str, depth)
		}
	case v.Type == gjson.Number:
		r.col.addLeaf(v.Raw)
	}
}

// partTag reports a member that says what a content part is rather than what it holds.
func partTag(key string) bool {
	switch key {
	case "type", "role", "id", "name", "mimeType", "mime_type", "format", "annotations":
		return true
	}
	return messages.RoleOf(key)&messages.CallIDKey != 0
}

// addPayload gathers the values of el, what a payload source read of attribute k. A
// payload that is itself a message structure (LangChain records a tool's result as the
// ToolMessage it returns, envelope and all) is hunted for what the rewriter marks in it
// and for its text, not for its structure: type tags, ids, names, statuses and metadata
// stay readable wherever the trace repeats them. Anything else is hunted leaf by leaf.
func (r *Redactor) addPayload(k string, el pcommon.Value) {
	if el.Type() != pcommon.ValueTypeStr {
		r.col.addValue(el, 0)
		return
	}
	s := el.Str()
	if !r.col.firstRead(s) {
		return
	}
	if r.rw.gatherMessage(s, k[strings.LastIndexByte(k, '.')+1:], &r.col) {
		return
	}
	r.col.addText(s, 0)
}

// eventPayloadMembers are the attributes of a message event that hold a message's content.
var eventPayloadMembers = set("content", "message", "text", "tool_calls", "gen_ai.input.messages", "gen_ai.output.messages",
	"gen_ai.prompt", "gen_ai.completion")

// Hashed tells the trace's rewriting that copies of t, a tool span's payload text, carry
// hash, as the analysis computed it (Extractor.HashedTexts): they are marked with it, not
// hashed again. A listed text, whose copy hashed by itself would not carry it, is also
// remembered with the trace's values, for the copies its late spans bring.
func (b ValueBuilder) Hashed(t toolspan.HashedText, hash string) {
	if t.Text == "" || hash == "" {
		return
	}
	h := b.r.rw.knownText(t.Text, hash)
	if t.Listed {
		b.r.col.hashed = append(b.r.col.hashed, h)
	}
}

// Exclude keeps s from being hunted: the trace's tool names, which a JSON-RPC request or
// an OpenLLMetry input carries beside the arguments, name the span and the records.
func (b ValueBuilder) Exclude(s string) { b.r.col.exclude(s) }

// Done returns the values gathered, nil when there are none; they share nothing with the
// Redactor. The values past the limit are counted in st.NotHunted.
func (b ValueBuilder) Done(st *Stats) *Values {
	b.r.col.dropExcluded()
	st.NotHunted += b.r.col.over
	followed := b.r.followed
	b.r.followed = nil
	if len(b.r.col.fingerprints) == 0 && len(b.r.col.hashed) == 0 && followed.empty() {
		return nil
	}
	v := &Values{}
	b.r.col.build(v)
	v.followed = followed
	return v
}

// Follow records, with the trace's values, where following the model found payloads no
// configuration lists (Followed), for its late spans.
func (b ValueBuilder) Follow(f *Followed) { b.r.followed = f }
