package analysis

import (
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/conversation"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Following the model (ANALYSIS.md, "Following the model"): a tool call is what a model
// asked for. The requests and responses the trace's message structures record are matched
// to the spans that executed them, recognised or not, and what the model said completes
// what those spans lack.

// Unseen reasons: a request no span answered, an attempt whose arguments or result
// nothing could read.
const (
	UnseenUnanswered      = "unanswered"
	UnseenArgumentsUnread = "arguments_unread"
	UnseenResultUnread    = "result_unread"
)

// UnseenKey is what an unseen tool call is counted by.
type UnseenKey struct {
	Reason string
	// Scope is the instrumentation scope of the span the request was read from, or of
	// the attempt's span.
	Scope string
}

// followed is what following the model found in one trace.
type followed struct {
	conv *conversation.Conversation
	// told is what the model said of each attempt node it matched.
	told map[int32]toolspan.Told
	// byRole marks the nodes no rule names, whose payload is read by its keys' roles.
	byRole map[int32]bool
	// unanswered are the requests no span answered.
	unanswered []int
}

// follow reads the trace's conversation and matches its requests to the tool spans isTool
// marks (the rules' attempts; logical marks those with tool children), then to spans no
// rule names, which it marks in isTool. It returns nil when there is nothing to follow.
func (an *Analyzer) follow(t *grouping.Tree, isTool, logical []bool) *followed {
	if !an.cfg.Recognition.FollowModel.Enabled {
		return nil
	}
	conv := an.reader.Read(t, isTool, readMode(t, conversation.Full))
	an.dropHandoffs(conv)
	if len(conv.Requests) == 0 && (len(conv.Offers) == 0 || !an.cfg.Recognition.FollowModel.OfferedTools) && len(conv.Responses) == 0 {
		return nil
	}
	f := &followed{conv: conv, told: map[int32]toolspan.Told{}}
	execs := an.executors(t, isTool, logical)
	of, count := an.scratch.matcher.Match(t, conv.Requests, execs)
	f.record(execs, of)
	an.subAttempts(t, conv, isTool, execs, f)
	var open []int
	for j, n := range count {
		if n == 0 {
			open = append(open, j)
		}
	}
	if len(open) > 0 || len(conv.Requests) == 0 && an.cfg.Recognition.FollowModel.OfferedTools {
		cands := conversation.Candidates(t, conv, open, isTool, an.isAgent)
		reqs := make([]conversation.Request, len(open))
		for k, j := range open {
			reqs[k] = conv.Requests[j]
		}
		cof, ccount := an.scratch.candidateMatcher.Match(t, reqs, cands)
		// Indexes into conv.Requests, as record wants them.
		byReq := make([]int, len(cof))
		for i, k := range cof {
			byReq[i] = -1
			if k >= 0 {
				byReq[i] = open[k]
			}
		}
		f.record(cands, byReq)
		for i, e := range cands {
			switch {
			case cof[i] >= 0:
			case len(conv.Requests) == 0:
				// Offered, not requested: an attempt of the tool, with nothing told.
				f.told[e.Node] = toolspan.Told{Tool: e.Tool}
			default:
				continue
			}
			isTool[e.Node] = true
			if f.byRole == nil {
				f.byRole = map[int32]bool{}
			}
			f.byRole[e.Node] = true
		}
		for k, n := range ccount {
			if n == 0 {
				f.unanswered = append(f.unanswered, open[k])
			}
		}
	}
	// A recognised attempt no request names still learns its response by its call id.
	for _, e := range execs {
		if _, ok := f.told[e.Node]; ok || e.CallID == "" {
			continue
		}
		if r, ok := conv.Response(e.CallID); ok {
			f.told[e.Node] = toolspan.Told{Result: r.Content, HasResult: r.HasContent, Failed: r.Failed}
		}
	}
	return f
}

// MessageKeys returns the attributes of span that hold a message structure naming a tool
// call or response (conversation.Reader.MessageKeys), for the redaction of a late span.
func (an *Analyzer) MessageKeys(span ptrace.Span) []string {
	if !an.cfg.Recognition.FollowModel.Enabled {
		return nil
	}
	return an.reader.MessageKeys(span)
}

// record keeps what the model said of each executor a request matched. The response
// answers the request's last execution: an earlier one (a framework's retry before it)
// takes the call's id, tool and arguments, not its result.
func (f *followed) record(execs []conversation.Executor, of []int) {
	last := map[int]int{} // request -> its executor that started last
	for i := range execs {
		if j := of[i]; j >= 0 {
			if k, ok := last[j]; !ok || execs[i].Start >= execs[k].Start {
				last[j] = i
			}
		}
	}
	for i, e := range execs {
		if j := of[i]; j >= 0 {
			told := toldFrom(f.conv, j)
			if last[j] != i {
				told.Result, told.HasResult, told.Failed = "", false, false
			}
			f.told[e.Node] = told
		}
	}
}

// toldFrom is what request j and its response say.
func toldFrom(conv *conversation.Conversation, j int) toolspan.Told {
	r := conv.Requests[j]
	told := toolspan.Told{CallID: r.CallID, Tool: r.Tool, Args: r.Args, HasArgs: r.HasArgs}
	if resp, ok := conv.ResponseTo(j); ok {
		told.Result, told.HasResult, told.Failed = resp.Content, resp.HasContent, resp.Failed
	}
	return told
}

// executors are the attempts the rules recognised (tool spans without tool children),
// with what following matches them by.
func (an *Analyzer) executors(t *grouping.Tree, isTool, logical []bool) []conversation.Executor {
	var out []conversation.Executor
	for i := range t.Nodes {
		if !isTool[i] || logical[i] {
			continue
		}
		span := t.Nodes[i].Span
		id, tool := an.x.Identity(span)
		out = append(out, conversation.Executor{Node: int32(i), CallID: id, Tool: tool, Start: span.StartTimestamp()})
	}
	return out
}

// subAttempts marks, below each attempt with a call id, the spans that carry that id whole
// in an attribute (not HTTP sends): the tries a framework's retry made inside one tool
// execution (ADK's workflow node attempts under a NodeTool). The attempt becomes their
// logical span.
func (an *Analyzer) subAttempts(t *grouping.Tree, conv *conversation.Conversation, isTool []bool, execs []conversation.Executor, f *followed) {
	for _, e := range execs {
		if e.CallID == "" {
			continue
		}
		for _, d := range descendantsCarrying(t, e.Node, e.CallID, isTool, conv, &an.scratch.walk, false) {
			isTool[d] = true
			told, ok := f.told[e.Node]
			if !ok {
				told = toolspan.Told{CallID: e.CallID, Tool: e.Tool}
			}
			f.told[d] = toolspan.Told{CallID: told.CallID, Tool: told.Tool, Args: told.Args, HasArgs: told.HasArgs}
		}
	}
}

// descendantsCarrying lists the spans below root, not crossing other tool spans, that
// carry id whole as an attribute value of their own, HTTP sends and speakers (the model
// spans requests were read from) aside. The walk is bounded by the span count.
// stack is the walk's working space, handed back grown for the next walk; first stops the
// walk at the first span found.
func descendantsCarrying(t *grouping.Tree, root int32, id string, isTool []bool, conv *conversation.Conversation,
	stack *[]int32, first bool) []int32 {
	var out []int32
	st := append((*stack)[:0], t.Children(root)...)
	defer func() { *stack = st[:0] }()
	for steps := 0; len(st) > 0 && steps < len(t.Nodes); steps++ {
		i := st[len(st)-1]
		st = st[:len(st)-1]
		if isTool[i] {
			continue
		}
		span := t.Nodes[i].Span
		if !toolspan.IsTransport(span) && !conv.Speaker(i) && carries(span, id) {
			if out = append(out, i); first {
				return out
			}
		}
		st = append(st, t.Children(i)...)
	}
	return out
}

// carries reports whether one of span's own string attributes is id (a flattened message
// field is a message's, not the span's).
func carries(span ptrace.Span, id string) bool {
	for k, v := range span.Attributes().All() {
		if s := v.Str(); len(s) == len(id) && s == id && !conversation.IsFlattened(k) {
			return true
		}
	}
	return false
}

// dropHandoffs removes the requests that hand the conversation to another agent.
func (an *Analyzer) dropHandoffs(conv *conversation.Conversation) {
	if len(an.cfg.Recognition.FollowModel.HandoffPrefixes) == 0 {
		return
	}
	out := conv.Requests[:0]
	for _, r := range conv.Requests {
		if !an.isHandoff(r.Tool) {
			out = append(out, r)
		}
	}
	conv.Requests = out
}

func (an *Analyzer) isHandoff(tool string) bool {
	for _, p := range an.cfg.Recognition.FollowModel.HandoffPrefixes {
		if p != "" && len(tool) > len(p) && tool[:len(p)] == p {
			return true
		}
	}
	return false
}

// countUnseen counts the trace's requests no span answered, by the scope of the span they
// were read from, and its attempts whose arguments or result nothing read, by the scope of
// their own span.
func countUnseen(t *grouping.Tree, f *followed, attempts []*grouping.Attempt) map[UnseenKey]int {
	var out map[UnseenKey]int
	add := func(reason string, node int32) {
		if out == nil {
			out = map[UnseenKey]int{}
		}
		out[UnseenKey{Reason: reason, Scope: t.Nodes[node].Scope.Name()}]++
	}
	if f != nil {
		for _, j := range f.unanswered {
			add(UnseenUnanswered, f.conv.Requests[j].Node)
		}
	}
	for _, a := range attempts {
		if !a.Has(toolspan.FieldArgsHash) {
			add(UnseenArgumentsUnread, a.Node)
		}
		if !a.Has(toolspan.FieldResultHash) && !a.Status.Failed() {
			add(UnseenResultUnread, a.Node)
		}
	}
	return out
}

// readMode is mode, reading the inputs' history too in the rest of a trace part of which
// was decided before: the outputs that made its requests may have gone with that part.
func readMode(t *grouping.Tree, mode conversation.Mode) conversation.Mode {
	if t.Rest {
		return mode | conversation.History
	}
	return mode
}
