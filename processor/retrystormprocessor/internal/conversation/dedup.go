package conversation

import (
	"hash/maphash"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// dedupScratch is the maps of deduplication (Conversation.dedup), cleared between uses.
type dedupScratch struct {
	byID          map[string]int
	byFingerprint map[uint64][]int
	nth           map[occurrence]int
	withID        map[uint64][]int
}

// occurrence is the k-th id-less request of one fingerprint in one span.
type occurrence struct {
	fingerprint uint64
	node        int32
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
			r.fingerprint = rd.fingerprint(r.Tool, r.argsRaw)
		}
		c.Requests = append(c.Requests, r)
		c.speakers[node] = true
	}
	for _, r := range f.responses {
		r.Node = node
		if r.CallID == "" {
			r.fingerprint = rd.fingerprint(r.Tool, r.Content)
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

// fingerprint hashes a tool and a payload as written, a JSON string by its text, white
// space left out: records of one call in two encodings (an object, a JSON string holding
// it) fingerprint alike unless their members are ordered differently.
func (rd *Reader) fingerprint(tool, raw string) uint64 {
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
		sc.byID, sc.byFingerprint, sc.nth, sc.withID = map[string]int{}, map[uint64][]int{}, map[occurrence]int{}, map[uint64][]int{}
	}
	byID, byFingerprint, nth := sc.byID, sc.byFingerprint, sc.nth
	defer func() { clear(byID); clear(byFingerprint); clear(nth); clear(sc.withID) }()
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
		k := occurrence{r.fingerprint, r.Node}
		n := nth[k]
		nth[k] = n + 1
		if n < len(byFingerprint[r.fingerprint]) {
			j := byFingerprint[r.fingerprint][n]
			if earlier(r.Node, out[j].Node) {
				out[j].Node, out[j].Seq = r.Node, r.Seq
			}
			continue
		}
		byFingerprint[r.fingerprint] = append(byFingerprint[r.fingerprint], len(out))
		out = append(out, r)
	}
	if !idless || len(byID) == 0 {
		return out
	}
	// Id-less records of requests with an id.
	withID := sc.withID
	for j, r := range out {
		if r.CallID != "" {
			out[j].fingerprint = rd.fingerprint(r.Tool, r.argsRaw)
			withID[out[j].fingerprint] = append(withID[out[j].fingerprint], j)
		}
	}
	drop := make([]bool, len(out))
	for j, r := range out {
		if r.CallID != "" || len(withID[r.fingerprint]) == 0 {
			continue
		}
		k := withID[r.fingerprint][0]
		withID[r.fingerprint] = withID[r.fingerprint][1:]
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
		fingerprint uint64
		node        int32
	}
	nth := map[occurrence]int{}
	byFingerprint := map[uint64][]int{}
	out := resps[:0]
	for _, r := range resps {
		if r.CallID == "" {
			k := occurrence{r.fingerprint, r.Node}
			n := nth[k]
			nth[k] = n + 1
			if n < len(byFingerprint[r.fingerprint]) {
				j := byFingerprint[r.fingerprint][n]
				out[j].Failed = out[j].Failed || r.Failed
				continue
			}
			byFingerprint[r.fingerprint] = append(byFingerprint[r.fingerprint], len(out))
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
