package analysis

import (
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/conversation"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
)

// Triage's look at the model's side of tool calls: the requests are skimmed (ids, tools,
// whether they carry arguments; no responses, no arguments decoded) and matched to the
// rules' attempts as the analysis matches them. A trace is proven clean only where
// following the model could change nothing the analysis reports: every request answered
// by exactly one recognised attempt, no attempt left without its own result for a
// response to fill (or fail), no span below an attempt carrying its call id, and, where
// no request is recorded, no span named for a tool the model was offered.

const (
	stopUnanswered     triageStop = "a model's request no recognised attempt answers"
	stopRetriedRequest triageStop = "two attempts answer one model request"
	stopResultUnread   triageStop = "an attempt without a result of its own beside the model's messages"
	stopSubAttempt     triageStop = "a span below an attempt carries its call id"
	stopOfferedTool    triageStop = "a span named for a tool the model was offered"
)

// followTriage runs the look and sets the trace's unseen counts as the analysis would.
func (an *Analyzer) followTriage(q *IndexedTrace, st *triageSpans) triageStop {
	if !an.cfg.Recognition.FollowModel.Enabled {
		return ""
	}
	t := q.Tree
	conv := an.reader.Read(t, st.isTool, readMode(t, conversation.Skim))
	an.dropHandoffs(conv)
	execs := an.scratch.executors[:0]
	for i := range st.attempts {
		a := &st.attempts[i].Attempt
		execs = append(execs, conversation.Executor{Node: st.attempts[i].Node, CallID: a.CallID, Tool: a.ToolName, Start: a.Start})
	}
	an.scratch.executors = execs[:0]
	var of []int // the request each attempt answers
	if conv.MessageSpans > 0 {
		var stop triageStop
		if of, stop = an.followedExecutors(q, st, conv, execs); stop != "" {
			return stop
		}
	}
	if len(conv.Requests) == 0 && conv.MessageSpans > 0 && an.cfg.Recognition.FollowModel.OfferedTools {
		an.reader.ReadOffers(conv, t, st.isTool)
		if len(conv.Offers) > 0 && len(conversation.Candidates(t, conv, nil, st.isTool, an.isAgent)) > 0 {
			return stopOfferedTool
		}
	}
	q.Unseen = an.triageUnseen(t, st, conv, execs, of)
	return ""
}

// followedExecutors matches the requests to the attempts (of: the request each answers,
// valid until the analyzer's next match) and stops where the analysis could find more
// than the rules did.
func (an *Analyzer) followedExecutors(q *IndexedTrace, st *triageSpans, conv *conversation.Conversation, execs []conversation.Executor) ([]int, triageStop) {
	t := q.Tree
	of, count := an.scratch.matcher.Match(t, conv.Requests, execs)
	for _, n := range count {
		switch {
		case n == 0:
			return nil, stopUnanswered
		case n > 1:
			return nil, stopRetriedRequest
		}
	}
	withResult := an.scratch.withResult
	clear(withResult)
	for _, p := range st.fingerprints {
		withResult[p.node] = true
	}
	for _, e := range execs {
		if !withResult[e.Node] {
			return nil, stopResultUnread
		}
		if e.CallID != "" && len(descendantsCarrying(t, e.Node, e.CallID, st.isTool, conv, &an.scratch.walk, true)) > 0 {
			return nil, stopSubAttempt
		}
	}
	// An attempt keyed by the fallback takes its request's call id, as the analysis
	// gives it: its call is no longer degraded.
	for i, e := range execs {
		if e.CallID == "" && of[i] >= 0 && conv.Requests[of[i]].CallID != "" && st.attempts[i].Logical < 0 {
			q.DegradedCalls--
		}
	}
	return of, ""
}

// triageUnseen counts, for a trace about to be proven clean, what countUnseen would: no
// request is left unanswered (triage stops there), so only attempts without arguments
// (none from their request, none of their own) and without a result (none of their own:
// with messages beside them triage stops there) are counted. of is the request each
// attempt answers, as followedExecutors matched them (nil: no message structure).
func (an *Analyzer) triageUnseen(t *grouping.Tree, st *triageSpans, conv *conversation.Conversation, execs []conversation.Executor, of []int) map[UnseenKey]int {
	var out map[UnseenKey]int
	add := func(reason string, node int32) {
		if out == nil {
			out = map[UnseenKey]int{}
		}
		out[UnseenKey{Reason: reason, Scope: t.Nodes[node].Scope.Name()}]++
	}
	withResult := an.scratch.withResult
	clear(withResult)
	for _, p := range st.fingerprints {
		withResult[p.node] = true
	}
	for i, e := range execs {
		told := of != nil && of[i] >= 0 && conv.Requests[of[i]].HasArgs
		if !told && !an.x.HasArgs(t.Nodes[e.Node].Span) {
			add(UnseenArgumentsUnread, e.Node)
		}
		if !withResult[e.Node] {
			add(UnseenResultUnread, e.Node)
		}
	}
	return out
}
