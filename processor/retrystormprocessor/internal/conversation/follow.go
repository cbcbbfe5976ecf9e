package conversation

import (
	"cmp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Executor is a span that may have run a tool a model asked for: a tool span a
// recognition rule names, or a span found by following the model.
type Executor struct {
	Node int32
	// CallID is the call id the span's own attributes give, "" for none.
	CallID string
	Tool   string
	Start  pcommon.Timestamp
}

// Matcher matches requests to the executors that answered them, in working space it keeps
// from one match to the next (triage matches every trace). It is not safe for concurrent
// use.
type Matcher struct {
	of, count, order, made []int
	byID                   map[string]int
}

// Match says which request each executor answered: Of[i] is the request of execs[i], -1
// for none; Count[j] is how many executors answered reqs[j]. An executor answers the
// request whose call id it carries; one without a call id answers a request for its tool
// made before it started, in a span that is not its ancestor: the earliest such request
// no executor answered yet, else the latest one (a retry of it: a framework re-runs a call
// without asking the model again). What is left is paired in order, tool by tool. Both
// lists are m's, valid until its next Match.
func (m *Matcher) Match(t *grouping.Tree, reqs []Request, execs []Executor) (of []int, count []int) {
	of = grow(&m.of, len(execs))
	count = grow(&m.count, len(reqs))
	for i := range of {
		of[i] = -1
	}
	if len(reqs) == 0 || len(execs) == 0 {
		return of, count
	}
	if m.byID == nil {
		m.byID = make(map[string]int, len(reqs))
	}
	byID := m.byID
	defer clear(byID) // no ids of this trace kept alive, and empty for the next
	for j, r := range reqs {
		if r.CallID != "" {
			byID[r.CallID] = j
		}
	}
	// Executors in start order, so a retry finds its first attempt answered.
	order := grow(&m.order, len(execs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(execs[a].Start, execs[b].Start) })
	for _, i := range order {
		if j, ok := byID[execs[i].CallID]; ok && execs[i].CallID != "" {
			of[i] = j
			count[j]++
		}
	}
	// Requests in the order they were made.
	made := grow(&m.made, len(reqs))
	for j := range made {
		made[j] = j
	}
	start := func(j int) pcommon.Timestamp { return t.Nodes[reqs[j].Node].Span.StartTimestamp() }
	slices.SortStableFunc(made, func(a, b int) int {
		if c := cmp.Compare(start(a), start(b)); c != 0 {
			return c
		}
		if reqs[a].Node != reqs[b].Node {
			return cmp.Compare(reqs[a].Node, reqs[b].Node)
		}
		return cmp.Compare(reqs[a].Seq, reqs[b].Seq)
	})
	for _, i := range order {
		e := &execs[i]
		if of[i] >= 0 || e.CallID != "" && byIDHas(byID, e.CallID) || e.Tool == "" {
			continue
		}
		fresh, latest := -1, -1
		for _, j := range made {
			r := &reqs[j]
			if r.Tool != e.Tool || start(j) > e.Start || t.IsAncestor(e.Node, r.Node) || r.Node == e.Node {
				continue
			}
			// A request with an id answered by its own id is not this one's, unless it
			// is a retry of it.
			if fresh < 0 && count[j] == 0 {
				fresh = j
			}
			latest = j
		}
		switch {
		case fresh >= 0:
			of[i] = fresh
		case latest >= 0 && e.CallID == "":
			of[i] = latest
		default:
			continue
		}
		count[of[i]]++
	}
	// Left over: executors no request made before them could take (clock skew, a
	// request recorded only after the execution), paired in order with the requests left.
	for _, i := range order {
		e := &execs[i]
		if of[i] >= 0 || e.CallID != "" || e.Tool == "" {
			continue
		}
		for _, j := range made {
			if count[j] == 0 && reqs[j].Tool == e.Tool && reqs[j].Node != e.Node && !t.IsAncestor(e.Node, reqs[j].Node) {
				of[i] = j
				count[j]++
				break
			}
		}
	}
	return of, count
}

// grow returns (*buf)[:n], zeroed, growing *buf when it is short.
func grow(buf *[]int, n int) []int {
	*buf = slices.Grow((*buf)[:0], n)[:n]
	clear(*buf)
	return *buf
}

func byIDHas(byID map[string]int, id string) bool {
	_, ok := byID[id]
	return ok
}

// Candidates are the spans that may have executed the requests no recognised tool span
// answered, or, when the trace records no request, the tools the model was offered: a
// span that carries a request's call id as an attribute value, or whose name (or an
// attribute named *name) names the tool. Spans tool marks, speakers (the spans requests
// were read from), HTTP sends and agent spans are never candidates.
func Candidates(t *grouping.Tree, c *Conversation, reqs []int, isTool []bool, isAgent func(ptrace.Span) bool) []Executor {
	ids := map[string]string{}
	var tools []string
	for _, j := range reqs {
		r := c.Requests[j]
		if r.CallID != "" {
			ids[r.CallID] = r.Tool
		}
		if !slices.Contains(tools, r.Tool) {
			tools = append(tools, r.Tool)
		}
	}
	if len(reqs) == 0 {
		tools = c.Offers
	}
	if len(tools) == 0 {
		return nil
	}
	var out []Executor
	for i := range t.Nodes {
		node := int32(i)
		if isTool[i] || c.Speaker(node) {
			continue
		}
		span := t.Nodes[i].Span
		if toolspan.IsTransport(span) || isAgent != nil && isAgent(span) {
			continue
		}
		id, tool := carriedID(span, ids)
		if tool == "" {
			tool = namedTool(span, tools)
		}
		if tool == "" {
			continue
		}
		out = append(out, Executor{Node: node, CallID: id, Tool: tool, Start: span.StartTimestamp()})
	}
	return out
}

// carriedID returns the call id among ids that one of span's own attributes carries whole
// (a flattened message field is no attribute of the span's own), with its tool.
func carriedID(span ptrace.Span, ids map[string]string) (id, tool string) {
	if len(ids) == 0 {
		return "", ""
	}
	for k, v := range span.Attributes().All() {
		if v.Type() != pcommon.ValueTypeStr || IsFlattened(k) {
			continue
		}
		s := strings.TrimSpace(v.Str())
		if t, ok := ids[s]; ok {
			return s, t
		}
	}
	return "", ""
}

// namedTool returns the longest of tools that span's name mentions as a word (not inside
// a longer identifier) or that an attribute whose key ends in "name" holds whole.
func namedTool(span ptrace.Span, tools []string) string {
	best := ""
	name := span.Name()
	for _, tool := range tools {
		if len(tool) > len(best) && mentions(name, tool) {
			best = tool
		}
	}
	for k, v := range span.Attributes().All() {
		if v.Type() != pcommon.ValueTypeStr || !strings.HasSuffix(strings.ToLower(k), "name") || IsFlattened(k) {
			continue
		}
		s := strings.TrimSpace(v.Str())
		for _, tool := range tools {
			if len(tool) > len(best) && s == tool {
				best = tool
			}
		}
	}
	return best
}

// mentions reports whether s holds word with no identifier character on either side.
func mentions(s, word string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(word)
		if (i == 0 || !identChar(s[i-1])) && (end == len(s) || !identChar(s[end])) {
			return true
		}
		from = i + 1
	}
}

func identChar(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
