// Package conversation reads what a trace's spans record of the model's side of tool
// calls: the tool requests a model made, the responses it was given, and the tools it was
// offered, out of the message structures SDKs write (attributes, flattened attributes and
// events, in any vocabulary package messages knows). A tool call is what a model asked
// for: these are what following the model matches to the spans that executed them.
package conversation // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/conversation"

import (
	"hash/maphash"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// Request is one tool call a model asked for.
type Request struct {
	// CallID is the call's id, "" where the vocabulary carries none (or a placeholder).
	CallID string
	Tool   string
	// Args is the arguments as JSON text (a JSON string's own text), read in full mode.
	Args    string
	HasArgs bool
	// Node is the span the request was made in: of the spans whose messages carry it, the
	// one that ended first (later model calls repeat it as history).
	Node int32
	// Seq orders the requests of one span as its messages list them.
	Seq int
	// argsRaw is the arguments as they were written; fingerprint tells id-less requests apart
	// by their tool and argsRaw.
	argsRaw     string
	fingerprint uint64
}

// Response is what a model was told a tool call returned.
type Response struct {
	CallID string
	Tool   string
	// Content is what the tool returned as JSON text (a JSON string's own text).
	Content    string
	HasContent bool
	// Failed: the response says the call failed (an isError flag, a status "error", a
	// typed error output, a Gemini {"error": …} response).
	Failed bool
	Node   int32
	// fingerprint tells id-less responses apart by their tool and content.
	fingerprint uint64
}

// Conversation is what one trace's spans say of the model's tool calls.
type Conversation struct {
	// Requests, deduplicated: by call id, and id-less ones by tool and arguments.
	Requests []Request
	// Responses are read in full mode only, deduplicated by call id.
	Responses []Response
	// Offers are the tools the model was offered, read in full mode when no request was
	// found (content capture off): the names, each once.
	Offers []string
	// speakers marks, by node, the spans requests were read from.
	speakers []bool
	// MessageSpans counts the spans holding a message structure that names a tool.
	MessageSpans int
	// MessageKeys are, by span, the attributes a request or a response was read from, in
	// full mode: message structures, wherever an SDK put them, for redaction to rewrite.
	MessageKeys map[int32][]string
}

// Speaker reports a span requests were read from: a model or agent span, which executed
// no tool itself.
func (c *Conversation) Speaker(node int32) bool {
	return int(node) < len(c.speakers) && c.speakers[node]
}

// Response returns the response to call id, if the conversation holds one.
func (c *Conversation) Response(id string) (Response, bool) {
	if id == "" {
		return Response{}, false
	}
	for _, r := range c.Responses {
		if r.CallID == id {
			return r, true
		}
	}
	return Response{}, false
}

// Reader reads conversations. It is not safe for concurrent use.
type Reader struct {
	seed maphash.Seed
	// found is what the span being read holds; scratch the readings' working space.
	found   found
	scratch scratch
	// skim and full are the conversations a skim and a full reading return, each reused by
	// the next of its mode; dedup the maps of deduplication, cleared between uses.
	skim, full Conversation
	dedup      dedupScratch
	// flat is the flattened messages of the span being read.
	flat flatMessages
}

// NewReader returns a Reader.
func NewReader() *Reader { return &Reader{seed: maphash.MakeSeed()} }

// Mode says how much a reading reads: Skim or Full, and History or not.
type Mode uint8

const (
	// Skim reads the requests' ids, tools and whether they carry arguments: enough to tell
	// whether the trace's tool spans answer them.
	Skim Mode = 0
	// Full reads arguments, responses and, where no request is found, offers.
	Full Mode = 1
	// History reads the requests the model's inputs record as history beside the ones its
	// outputs made, for the rest of a trace whose earlier part (and the outputs in it) was
	// decided before (grouping.Tree.Rest).
	History Mode = 2
)

// Read reads the conversation of t's spans, passing over the spans skip marks (nil: none).
// Requests are read where a model's output records them; from its inputs only in a trace
// where no output holds one (an SDK that records the model's input alone) or in History
// mode. The Conversation is the Reader's own, valid until its next Read of the same mode
// (Skim or Full), except MessageKeys, which is the caller's: triage reads a skim and
// forgets it, the analysis a full reading, and neither allocates lists once the Reader
// has grown.
func (rd *Reader) Read(t *grouping.Tree, skip []bool, mode Mode) *Conversation {
	full := mode&Full != 0
	c := &rd.skim
	if full {
		c = &rd.full
	}
	// The lists are reused, emptied of the last trace's strings; the message keys are not:
	// the analysis hands them on with its result.
	clear(c.Requests)
	clear(c.Responses)
	clear(c.Offers)
	*c = Conversation{Requests: c.Requests[:0], Responses: c.Responses[:0], Offers: c.Offers[:0], speakers: c.speakers}
	if n := len(t.Nodes); cap(c.speakers) >= n {
		c.speakers = c.speakers[:n]
		clear(c.speakers)
	} else {
		c.speakers = make([]bool, n)
	}
	var inputs []int32 // spans with message structures read as input
	for i := range t.Nodes {
		if skip != nil && skip[i] {
			continue
		}
		holds, hasInput := rd.readSpan(c, t, int32(i), full, true)
		if holds {
			c.MessageSpans++
		}
		if hasInput {
			inputs = append(inputs, int32(i))
		}
	}
	if (len(c.Requests) == 0 || mode&History != 0) && len(inputs) > 0 {
		// No output recorded a request (or some outputs went with a part decided
		// before): read the inputs' requests, which dedup merges with the outputs'.
		for _, i := range inputs {
			rd.readInputRequests(c, t, i, full)
		}
	}
	c.dedup(t, rd)
	if full && len(c.Requests) == 0 {
		rd.readOffers(c, t, skip)
	}
	return c
}

// readSpan reads one span's attributes, flattened messages and events. It reports whether
// the span holds a message structure naming a tool, and whether any of it is input (whose
// requests are read only when no output holds one).
func (rd *Reader) readSpan(c *Conversation, t *grouping.Tree, node int32, full, outputs bool) (holds, hasInput bool) {
	span := t.Nodes[node].Span
	f := &rd.found
	f.requests, f.responses = f.requests[:0], f.responses[:0]
	flat := false
	for k, v := range span.Attributes().All() {
		// Most attributes are no JSON container: the first byte says so, before the key
		// is read (a flattened message's field is a plain value under a numbered key).
		if hasDigit(k) && IsFlattened(k) {
			flat = true
			continue
		}
		if !jsonContainer(v) {
			continue
		}
		input := isInputKey(k)
		if input && !full {
			// A skim reads no input (its requests are history, its responses unread) and
			// spares scanning what is most often a trace's longest string: a JSON
			// container says the span may hold messages, which is all triage asks.
			holds, hasInput = true, true
			continue
		}
		// The walk itself says whether the container holds a message structure naming a
		// tool: its text is not scanned for tool words first.
		s := containerText(v)
		parts := f.parts
		hasInput = hasInput || input
		before := len(f.requests) + len(f.responses)
		r := reading{full: full, requests: !input, found: f, scratch: &rd.scratch}
		r.walkAt(s, skipWS(s, 0), lastSegment(k), false, 0)
		holds = holds || f.parts > parts
		if full && len(f.requests)+len(f.responses) > before {
			if c.MessageKeys == nil {
				c.MessageKeys = map[int32][]string{}
			}
			c.MessageKeys[node] = append(c.MessageKeys[node], k)
		}
	}
	if flat {
		h, in := rd.readFlattened(span.Attributes(), full, f)
		holds, hasInput = holds || h, hasInput || in
	}
	for _, ev := range span.Events().All() {
		evInput := isInputEvent(ev.Name())
		for k, v := range ev.Attributes().All() {
			if !jsonContainer(v) {
				continue
			}
			input := evInput || isInputKey(k)
			if input && !full {
				holds, hasInput = true, true
				continue
			}
			s := containerText(v)
			parts := f.parts
			hasInput = hasInput || input
			r := reading{full: full, requests: !input, found: f, scratch: &rd.scratch}
			r.walkAt(s, skipWS(s, 0), lastSegment(k), false, 0)
			holds = holds || f.parts > parts
		}
	}
	rd.take(c, node)
	return holds, hasInput
}

// readInputRequests reads the requests of node's input message structures.
func (rd *Reader) readInputRequests(c *Conversation, t *grouping.Tree, node int32, full bool) {
	span := t.Nodes[node].Span
	f := &rd.found
	f.requests, f.responses = f.requests[:0], f.responses[:0]
	read := func(k string, v pcommon.Value, evInput bool) {
		if s, ok := messageText(v); ok && (evInput || isInputKey(k)) {
			r := reading{full: full, requests: true, found: f, scratch: &rd.scratch}
			r.walkAt(s, skipWS(s, 0), lastSegment(k), false, 0)
		}
	}
	for k, v := range span.Attributes().All() {
		if !IsFlattened(k) {
			read(k, v, false)
		}
	}
	rd.readFlattenedRequests(span.Attributes(), true, full, f)
	for _, ev := range span.Events().All() {
		evInput := isInputEvent(ev.Name())
		for k, v := range ev.Attributes().All() {
			read(k, v, evInput)
		}
	}
	f.responses = f.responses[:0] // read already, with every attribute
	rd.take(c, node)
}

// ResponseTo returns the response to request j: by its call id, or, for an id-less
// request, the id-less response of its tool with the same rank among its tool's.
func (c *Conversation) ResponseTo(j int) (Response, bool) {
	r := c.Requests[j]
	if r.CallID != "" {
		return c.Response(r.CallID)
	}
	rank := 0
	for k := 0; k < j; k++ {
		if c.Requests[k].CallID == "" && c.Requests[k].Tool == r.Tool {
			rank++
		}
	}
	for _, resp := range c.Responses {
		if resp.CallID != "" || resp.Tool != r.Tool {
			continue
		}
		if rank == 0 {
			return resp, true
		}
		rank--
	}
	return Response{}, false
}

// Payloads are the arguments of every request and the content of every response, as JSON
// text: what redaction hunts in every span, wherever the executing span was found or not.
func (c *Conversation) Payloads() []string {
	var out []string
	for _, r := range c.Requests {
		if r.HasArgs && r.Args != "" {
			out = append(out, r.Args)
		}
	}
	for _, r := range c.Responses {
		if r.HasContent && r.Content != "" {
			out = append(out, r.Content)
		}
	}
	return out
}

// MessageKeys returns the attributes of span a tool call or response can be read from:
// its message structures, wherever an SDK put them. A late span of a kept trace is read
// so, alone, for redaction to rewrite them as its trace's spans were.
func (rd *Reader) MessageKeys(span ptrace.Span) []string {
	var keys []string
	f := &rd.found
	for k, v := range span.Attributes().All() {
		if IsFlattened(k) {
			continue
		}
		s, ok := messageText(v)
		if !ok {
			continue
		}
		f.requests, f.responses = f.requests[:0], f.responses[:0]
		r := reading{full: true, requests: true, found: f, scratch: &rd.scratch}
		r.walk(parseJSON(s), lastSegment(k), false, 0)
		if len(f.requests)+len(f.responses) > 0 {
			keys = append(keys, k)
		}
	}
	f.requests, f.responses = f.requests[:0], f.responses[:0]
	return keys
}
