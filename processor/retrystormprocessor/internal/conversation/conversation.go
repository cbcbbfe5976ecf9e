// Package conversation reads what a trace's spans record of the model's side of tool
// calls: the tool requests a model made, the responses it was given, and the tools it was
// offered, out of the message structures SDKs write (attributes, flattened attributes and
// events, in any vocabulary package messages knows). A tool call is what a model asked
// for: these are what following the model matches to the spans that executed them.
package conversation // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/conversation"

import (
	"hash/maphash"
	"slices"
	"strings"

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
	// argsRaw is the arguments as they were written; print tells id-less requests apart
	// by their tool and argsRaw.
	argsRaw string
	print   uint64
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
	// print tells id-less responses apart by their tool and content.
	print uint64
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
	// skim is the conversation a skim returns, reused by the next; dedup the maps of
	// deduplication, cleared between uses.
	skim  Conversation
	dedup dedupScratch
	// flat is the flattened messages of the span being read.
	flat flatMessages
}

type dedupScratch struct {
	byID    map[string]int
	byPrint map[uint64][]int
	nth     map[occurrence]int
	withID  map[uint64][]int
}

// occurrence is the k-th id-less request of one print in one span.
type occurrence struct {
	print uint64
	node  int32
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
// mode. A skim's
// Conversation is the Reader's own, valid until its next Read: triage reads it and
// forgets it, and a skim of every trace allocates nothing once the Reader has grown.
func (rd *Reader) Read(t *grouping.Tree, skip []bool, mode Mode) *Conversation {
	full := mode&Full != 0
	c := &Conversation{}
	if !full {
		c = &rd.skim
		*c = Conversation{Requests: c.Requests[:0], Responses: c.Responses[:0], Offers: c.Offers[:0], speakers: c.speakers}
	}
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

// take moves what rd.found holds into c, for node. An id-less request beside a request
// of the same tool with an id, in one span, is a second record of it (OpenInference writes
// a call both in output.value, with its id, and flattened, without): one id-less request
// is dropped per such request.
func (rd *Reader) take(c *Conversation, node int32) {
	f := &rd.found
	f.requests = dropIDLessCopies(f.requests)
	for i, r := range f.requests {
		r.Node, r.Seq = node, i
		if r.CallID == "" {
			r.print = rd.print(r.Tool, r.argsRaw)
		}
		c.Requests = append(c.Requests, r)
		c.speakers[node] = true
	}
	for _, r := range f.responses {
		r.Node = node
		if r.CallID == "" {
			r.print = rd.print(r.Tool, r.Content)
		}
		c.Responses = append(c.Responses, r)
	}
	f.requests, f.responses = f.requests[:0], f.responses[:0]
}

// dropIDLessCopies removes, for each request with an id, one id-less request of the same
// tool.
func dropIDLessCopies(reqs []Request) []Request {
	withID := 0
	for _, r := range reqs {
		if r.CallID != "" {
			withID++
		}
	}
	if withID == 0 || withID == len(reqs) {
		return reqs
	}
	copies := map[string]int{}
	for _, r := range reqs {
		if r.CallID != "" {
			copies[r.Tool]++
		}
	}
	out := reqs[:0]
	for _, r := range reqs {
		if r.CallID == "" && copies[r.Tool] > 0 {
			copies[r.Tool]--
			continue
		}
		out = append(out, r)
	}
	return out
}

// print fingerprints a tool and a payload as written, a JSON string by its text, white
// space left out: records of one call in two encodings (an object, a JSON string holding
// it) fingerprint alike unless their members are ordered differently.
func (rd *Reader) print(tool, raw string) uint64 {
	if len(raw) > 0 && raw[0] == '"' {
		raw = parseJSON(raw).text()
	}
	var h maphash.Hash
	h.SetSeed(rd.seed)
	h.WriteString(tool)
	h.WriteByte(0)
	for i := 0; i < len(raw); i++ {
		if b := raw[i]; b != ' ' && b != '\n' && b != '\t' && b != '\r' {
			h.WriteByte(b)
		}
	}
	return h.Sum64()
}

// dedup keeps one request per call id and one per id-less tool and arguments (as many
// as the most one span lists), made where it was first recorded: in the span that ended
// first. An id-less request of the same tool and arguments as one with an id is that one,
// recorded again without its id (CrewAI's model output beside the crew's messages). The
// same for responses, by call id, else by tool and content.
func (c *Conversation) dedup(t *grouping.Tree, rd *Reader) {
	earlier := func(a, b int32) bool {
		sa, sb := t.Nodes[a].Span, t.Nodes[b].Span
		if ea, eb := sa.EndTimestamp(), sb.EndTimestamp(); ea != eb {
			return ea < eb
		}
		if xa, xb := sa.StartTimestamp(), sb.StartTimestamp(); xa != xb {
			return xa < xb
		}
		return a < b
	}
	if len(c.Requests) > 1 {
		c.Requests = dedupRequests(c.Requests, earlier, rd)
	}
	for j := range c.Requests {
		c.Requests[j].argsRaw = "" // it holds the attribute it was read from
	}
	if len(c.Responses) > 1 {
		c.Responses = dedupResponses(c.Responses)
	}
}

func dedupRequests(reqs []Request, earlier func(a, b int32) bool, rd *Reader) []Request {
	sc := &rd.dedup
	if sc.byID == nil {
		sc.byID, sc.byPrint, sc.nth, sc.withID = map[string]int{}, map[uint64][]int{}, map[occurrence]int{}, map[uint64][]int{}
	}
	byID, byPrint, nth := sc.byID, sc.byPrint, sc.nth
	defer func() { clear(byID); clear(byPrint); clear(nth); clear(sc.withID) }()
	// For an id-less request, the k-th occurrence in one span is the k-th request. The
	// kept requests are written over the list read: out never passes the request read.
	out := reqs[:0]
	idless := false
	for _, r := range reqs {
		if r.CallID != "" {
			if j, ok := byID[r.CallID]; ok {
				if earlier(r.Node, out[j].Node) {
					out[j].Node, out[j].Seq = r.Node, r.Seq
				}
				out[j].HasArgs = out[j].HasArgs || r.HasArgs
				if out[j].Args == "" {
					out[j].Args = r.Args
				}
				continue
			}
			byID[r.CallID] = len(out)
			out = append(out, r)
			continue
		}
		idless = true
		k := occurrence{r.print, r.Node}
		n := nth[k]
		nth[k] = n + 1
		if n < len(byPrint[r.print]) {
			j := byPrint[r.print][n]
			if earlier(r.Node, out[j].Node) {
				out[j].Node, out[j].Seq = r.Node, r.Seq
			}
			continue
		}
		byPrint[r.print] = append(byPrint[r.print], len(out))
		out = append(out, r)
	}
	if !idless || len(byID) == 0 {
		return out
	}
	// Id-less records of requests with an id.
	withID := sc.withID
	for j, r := range out {
		if r.CallID != "" {
			out[j].print = rd.print(r.Tool, r.argsRaw)
			withID[out[j].print] = append(withID[out[j].print], j)
		}
	}
	drop := make([]bool, len(out))
	for j, r := range out {
		if r.CallID != "" || len(withID[r.print]) == 0 {
			continue
		}
		k := withID[r.print][0]
		withID[r.print] = withID[r.print][1:]
		if earlier(r.Node, out[k].Node) {
			out[k].Node, out[k].Seq = r.Node, r.Seq
		}
		drop[j] = true
	}
	kept := out[:0]
	for j, r := range out {
		if !drop[j] {
			kept = append(kept, r)
		}
	}
	return kept
}

func dedupResponses(resps []Response) []Response {
	seen := make(map[string]int, len(resps))
	type occurrence struct {
		print uint64
		node  int32
	}
	nth := map[occurrence]int{}
	byPrint := map[uint64][]int{}
	out := resps[:0]
	for _, r := range resps {
		if r.CallID == "" {
			k := occurrence{r.print, r.Node}
			n := nth[k]
			nth[k] = n + 1
			if n < len(byPrint[r.print]) {
				j := byPrint[r.print][n]
				out[j].Failed = out[j].Failed || r.Failed
				continue
			}
			byPrint[r.print] = append(byPrint[r.print], len(out))
			out = append(out, r)
			continue
		}
		if j, ok := seen[r.CallID]; ok {
			// A failure said anywhere stands; content is kept from the first.
			out[j].Failed = out[j].Failed || r.Failed
			if !out[j].HasContent {
				out[j].Content, out[j].HasContent = r.Content, r.HasContent
			}
			continue
		}
		seen[r.CallID] = len(out)
		out = append(out, r)
	}
	return out
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

// messageText is v as a message structure's JSON text, when it can be one that names a
// tool: a string holding a JSON object or array, or a map or slice.
func messageText(v pcommon.Value) (string, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := v.Str()
		return s, looksLikeMessages(s)
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		s := v.AsString()
		return s, holdsToolWord(s)
	}
	return "", false
}

// containerText is the JSON text of v, which jsonContainer accepted.
func containerText(v pcommon.Value) string {
	if v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return v.AsString()
}

// inputWords are the words of an attribute key (or event name) that say it records what
// the model was given rather than what it produced: its requests there are history.
var inputWords = [...]string{"input", "prompt", "request", "history"}

func isInputKey(k string) bool {
	for _, w := range inputWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	// The same words capitalised (llm.inputMessages, ai.Prompt): rarer, looked for only
	// where the key holds a capital letter.
	if strings.IndexFunc(k, func(r rune) bool { return r >= 'A' && r <= 'Z' }) < 0 {
		return false
	}
	for _, w := range inputWords {
		if containsFold(k, w) {
			return true
		}
	}
	return false
}

// hasDigit reports a key that may number a flattened list's element.
func hasDigit(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i]-'0' <= 9 {
			return true
		}
	}
	return false
}

// isInputEvent reports an event recording the model's input: the OTel GenAI per-message
// events (gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message, …) and any
// event whose name says input.
func isInputEvent(name string) bool {
	if strings.HasSuffix(name, ".message") && !strings.Contains(name, "choice") {
		return true
	}
	return isInputKey(name)
}

// containsFold is strings.Contains ignoring ASCII case, for a lowercase word.
func containsFold(s, word string) bool {
	n := len(word)
	for i := 0; i+n <= len(s); i++ {
		if s[i]|0x20 == word[0] && strings.EqualFold(s[i:i+n], word) {
			return true
		}
	}
	return false
}

func lastSegment(k string) string { return k[strings.LastIndexByte(k, '.')+1:] }

// readOffers reads the tools the model was offered (tool definitions: an object naming a
// tool beside its parameters' schema), from every span skip does not mark, each name once.
func (rd *Reader) readOffers(c *Conversation, t *grouping.Tree, skip []bool) {
	f := &rd.found
	f.offers = f.offers[:0]
	for i := range t.Nodes {
		if skip != nil && skip[i] {
			continue
		}
		for k, v := range t.Nodes[i].Span.Attributes().All() {
			s, ok := messageText(v)
			toolKey := containsFold(k, "tool")
			if !ok && toolKey && (v.Type() == pcommon.ValueTypeStr || v.Type() == pcommon.ValueTypeSlice) {
				// A list of the tools offered, under a key that says so (llm.tools,
				// gen_ai.tool.definitions): definitions, or their names alone.
				s = v.AsString()
				ok = payloadLooksLikeJSON(s)
			}
			if !ok {
				continue
			}
			doc := parseJSON(s)
			if toolKey && doc.isArray() {
				doc.each(func(_ string, el value) bool {
					if el.kind == kindString && toolName(el.text()) {
						f.offers = append(f.offers, el.text())
					}
					return true
				})
			}
			r := reading{full: true, found: f, scratch: &rd.scratch}
			r.walk(doc, lastSegment(k), false, 0)
		}
	}
	f.requests, f.responses = f.requests[:0], f.responses[:0]
	for _, name := range f.offers {
		if name != "" && !slices.Contains(c.Offers, name) {
			c.Offers = append(c.Offers, name)
		}
	}
	f.offers = f.offers[:0]
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

// ReadOffers reads the tools the model was offered into c, as Read does in full mode when
// the trace records no request.
func (rd *Reader) ReadOffers(c *Conversation, t *grouping.Tree, skip []bool) {
	rd.readOffers(c, t, skip)
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

// payloadLooksLikeJSON reports a JSON object or array.
func payloadLooksLikeJSON(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 1 && (s[0] == '[' || s[0] == '{')
}

// toolName reports a string that can be a tool's name: no white space, not empty, short.
func toolName(s string) bool {
	return s != "" && len(s) <= 128 && !strings.ContainsAny(s, " \t\n\r{}[]\"")
}

// jsonContainer reports a value that can hold a message structure: a map, a slice holding
// one, or a string that starts (after white space) like a JSON object or array.
func jsonContainer(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		return true
	case pcommon.ValueTypeSlice:
		// A list of plain values (finish reasons, ids) holds no message: only a list with
		// a container in it is read (and marshalled to be).
		for _, e := range v.Slice().All() {
			if jsonContainer(e) {
				return true
			}
		}
		return false
	case pcommon.ValueTypeStr:
		s := v.Str()
		i := 0
		for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
			i++
		}
		return i < len(s) && (s[i] == '{' || s[i] == '[')
	}
	return false
}
