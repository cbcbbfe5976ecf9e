// Package analysis reads one trace's spans the way real instrumentations write them and
// produces, for every logical tool call, its attempts, storm class, findings and summary.
package analysis // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/classify"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/conversation"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/grouping"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

// Signals are the trace-level facts sampling decides on.
type Signals struct {
	Storm      bool
	ToolError  bool
	Divergence bool
	SpanError  bool
	Incomplete bool
}

// Clean reports a trace with no storm, no non-ok tool attempt, no finding, no error span.
func (s Signals) Clean() bool {
	return !s.Storm && !s.ToolError && !s.Divergence && !s.SpanError && !s.Incomplete
}

// Unit is one record unit (a call or an agent-level chain) with its verdicts.
type Unit struct {
	*grouping.Unit
	Storm      bool
	Class      classify.Class
	Layer      stormrecord.Layer
	Layers     stormrecord.Layers
	StatusFlip bool
	Findings   []findings.Finding
	// Suspects are the unit's stale-cache suspects not resolved at analysis.
	Suspects   []findings.Suspect
	Incomplete int
	// Record is the summary, set for storms, failed calls and calls with findings.
	Record *stormrecord.Record
}

// Suspect is a stale-cache suspect of the trace (findings.Suspect) with its unit and the
// record a finding found later revises: the unit's Record, or, for a call that needs none
// without the finding, one built for it.
type Suspect struct {
	findings.Suspect
	Unit   *Unit
	Record *stormrecord.Record
}

// Trace is the analysis of one trace.
type Trace struct {
	TraceID pcommon.TraceID
	Tree    *grouping.Tree
	Units   []*Unit
	// HeldUnits are the units a provisional decision held back with the rest of the trace
	// (HoldBack): not this part's records nor counts, but its payloads all the same.
	HeldUnits []*Unit
	// Held marks, by node, the spans that went with HeldUnits (nil: none): this part
	// neither annotates nor forwards them.
	Held []bool
	// Findings holds every finding, trace-level ones (unbacked_citation) included.
	Findings []findings.Finding
	// FindingRecords holds the records of the trace-level findings, one per span they
	// concern; call-level findings are in their unit's Record.
	FindingRecords []SpanFindings
	// Suspects are the stale-cache suspects no earlier sighting resolved at analysis.
	Suspects []Suspect
	// Resolved are other traces' held suspects this trace's results resolved: findings
	// about traces decided before it.
	Resolved []stalecache.Match
	Signals  Signals
	// Tools are the tool names the trace touched.
	Tools []string
	// ToolSpans are the tree nodes of every recognised tool span: attempts, logical spans
	// and nested duplicates, whose raw payloads redaction removes.
	ToolSpans []int32
	// PayloadKeys are, for tool spans no rule names (following the model found them), the
	// attributes holding their raw payload.
	PayloadKeys map[int32][]string
	// MessageKeys are, by span, the attributes following the model read a tool call or
	// response from: message structures, for redaction to rewrite wherever they are.
	MessageKeys map[int32][]string
	// ModelPayloads are the arguments and results the model's requests and responses
	// carry, as JSON text: every value in them is hunted like an attempt's own.
	ModelPayloads []string
	// Unseen counts the tool calls the trace shows retry_storm could not see: requests no
	// span answered, attempts whose arguments or result nothing read.
	Unseen map[UnseenKey]int

	ToolAttempts       int
	IncompleteAttempts int
	Calls              int
	DegradedCalls      int
	Remaps             int
	// ClampedStarts and ClampedEnds count the attempts' times past toolspan.MaxTimestamp.
	ClampedStarts, ClampedEnds int
}

// Analyzer analyses traces. It is not safe for concurrent use: make one per goroutine;
// the result memory it is given may be shared.
type Analyzer struct {
	cfg Config
	// rules are cfg's divergence and completeness in the checks' terms.
	rules findings.Rules
	x     *toolspan.Extractor
	mem   findings.ResultMemory
	// scratch is Triage's reusable working space, spare a tree it may reuse.
	scratch triageScratch
	spare   *grouping.Tree
	// isAgent is x.IsAgentSpan, bound once: a method value made per trace would allocate.
	isAgent func(ptrace.Span) bool
	// reader reads the model's side of tool calls, for following the model.
	reader *conversation.Reader
}

// New returns an Analyzer of a validated cfg. key is the HMAC-SHA256 key of the payload
// hashes (empty: plain SHA-256). mem is the bounded cross-trace memory of the stale-cache
// check; nil disables that check.
func New(cfg Config, key []byte, mem findings.ResultMemory) *Analyzer {
	x := toolspan.NewExtractor(cfg.toolConfig(), key, cfg.Status.OverrideOK)
	return &Analyzer{
		cfg: cfg, rules: findings.NewRules(cfg.Divergence, cfg.Completeness), x: x, mem: mem,
		scratch: newTriageScratch(), isAgent: x.IsAgentSpan, reader: conversation.NewReader(),
	}
}

// Analyze analyses td, which holds the spans of one trace. It never modifies td.
func (an *Analyzer) Analyze(td ptrace.Traces) *Trace {
	return an.AnalyzeTree(grouping.NewTree(td))
}

// AnalyzeTree analyses the trace t indexes (the tree of an IndexedTrace, say). It never modifies
// the spans.
func (an *Analyzer) AnalyzeTree(t *grouping.Tree) *Trace {
	out := &Trace{Tree: t}
	t.IsAgent = an.isAgent
	if len(t.Nodes) > 0 {
		out.TraceID = t.Nodes[0].Span.TraceID()
	}
	attempts, reads := an.attempts(t, out)
	calls := grouping.Calls(t, attempts)
	out.Calls = len(calls)
	for _, c := range calls {
		if c.Degraded {
			out.DegradedCalls++
		}
		// Nested duplicates are records, not attempts: they ran once.
		out.ToolAttempts += len(c.Attempts)
		for _, a := range c.Attempts {
			out.ClampedStarts, out.ClampedEnds = countClamped(&a.Attempt, out.ClampedStarts, out.ClampedEnds)
		}
	}
	units := grouping.Units(calls)
	dup := findings.DuplicateSideEffects(units)
	recovered := findings.RecoveredLater(units)
	for _, gu := range units {
		u := an.unit(t, gu, out.TraceID)
		if recovered[gu] {
			u.Findings = slices.DeleteFunc(u.Findings, func(f findings.Finding) bool { return f.Kind == findings.UnrecoveredFailure })
		}
		u.Findings = append(u.Findings, dup[gu]...)
		out.Units = append(out.Units, u)
		out.Findings = append(out.Findings, u.Findings...)
		out.IncompleteAttempts += u.Incomplete
	}
	if an.mem != nil {
		for _, gu := range units {
			out.Resolved = append(out.Resolved, findings.RememberResults(gu, an.mem, out.TraceID)...)
		}
	}
	traceLevel := findings.UnbackedCitations(&an.rules, t, reads)
	out.Findings = append(out.Findings, traceLevel...)
	out.FindingRecords = an.findingRecords(t, out.TraceID, traceLevel)
	an.signals(out)
	for _, u := range out.Units {
		if u.Storm || u.Last().Status.String() != "ok" || len(u.Findings) > 0 {
			u.Record = buildRecord(out.TraceID, u)
		}
		for _, s := range u.Suspects {
			rec := u.Record
			if rec == nil {
				rec = buildRecord(out.TraceID, u)
			}
			out.Suspects = append(out.Suspects, Suspect{Suspect: s, Unit: u, Record: rec})
		}
	}
	return out
}

// attempts recognises the tool spans, marks the logical ones (a tool span with tool-span
// children), and returns the attempts with their transport sends, plus the reads of assets.
func (an *Analyzer) attempts(t *grouping.Tree, out *Trace) ([]*grouping.Attempt, findings.Reads) {
	n := len(t.Nodes)
	// isTool and logical are scratch space: nothing keeps them past this call.
	isTool := slices.Grow(an.scratch.analysisIsTool[:0], n)[:n]
	logical := slices.Grow(an.scratch.analysisLogical[:0], n)[:n]
	clear(isTool)
	clear(logical)
	defer func() { an.scratch.analysisIsTool, an.scratch.analysisLogical = isTool[:0], logical[:0] }()
	for i := range t.Nodes {
		isTool[i], _ = an.recognize(&t.Nodes[i], "")
	}
	server := an.scratch.analysisServer[:0]
	markLogical(t, isTool, logical)
	f := an.follow(t, isTool, logical)
	if f != nil {
		out.ModelPayloads = f.conv.Payloads()
		out.MessageKeys = f.conv.MessageKeys
	}
	server = markServerSide(t, isTool, server)
	an.scratch.analysisServer = server
	for _, s := range server {
		isTool[s] = false
	}
	markLogical(t, isTool, logical)
	for i := range t.Nodes {
		if isTool[i] {
			out.ToolSpans = append(out.ToolSpans, int32(i))
		}
	}
	out.ToolSpans = append(out.ToolSpans, server...)
	count := 0
	for i := range t.Nodes {
		if isTool[i] && !logical[i] {
			count++
		}
	}
	// One allocation for every attempt of the trace; the calls and units point into it.
	slab := make([]grouping.Attempt, count)
	reads := findings.Reads{}
	tools := map[string]struct{}{}
	attempts := make([]*grouping.Attempt, 0, count)
	for i := range t.Nodes {
		node := &t.Nodes[i]
		if !isTool[i] || logical[i] {
			if asset := an.x.ReadAsset(node.Span); asset != "" {
				reads.Add(asset, findings.ReadOK(node.Span))
			}
			continue
		}
		a := &slab[len(attempts)]
		*a = grouping.Attempt{Attempt: an.x.Extract(node.Span, node.Resource), Node: int32(i), Logical: -1}
		if f != nil {
			an.completeFollowed(a, f, out)
		}
		if p := node.Parent; p >= 0 && logical[p] {
			a.Logical = p
		}
		a.Agent = t.Agent(int32(i))
		a.AgentRun = t.AgentRun(a.Agent)
		if a.RunID == "" && a.Agent >= 0 {
			a.RunID = an.x.RunID(t.Nodes[a.Agent].Span)
		}
		a.Sends = sends(t, int32(i), isTool)
		reads.Add(a.ReadAsset, findings.ToolReadOK(a.Status))
		tools[a.ToolName] = struct{}{}
		attempts = append(attempts, a)
	}
	for name := range tools {
		out.Tools = append(out.Tools, name)
	}
	an.failFromServerSide(t, server, isTool, attempts)
	for _, a := range attempts {
		if a.Remap != nil {
			out.Remaps++
		}
	}
	out.Unseen = countUnseen(t, f, attempts)
	return attempts, reads
}

// markLogical marks the tool spans with tool-span children.
func markLogical(t *grouping.Tree, isTool, logical []bool) {
	clear(logical)
	for i := range t.Nodes {
		if p := t.Nodes[i].Parent; isTool[i] && p >= 0 && isTool[p] {
			logical[p] = true
		}
	}
}

// completeFollowed completes an attempt with what following the model learned of it: the
// payload of a span no rule names, read by its keys' roles, and what the model said.
func (an *Analyzer) completeFollowed(a *grouping.Attempt, f *followed, out *Trace) {
	if f.byRole[a.Node] {
		an.x.ReadByRole(&a.Attempt)
		if len(a.RedactKeys) > 0 {
			if out.PayloadKeys == nil {
				out.PayloadKeys = map[int32][]string{}
			}
			out.PayloadKeys[a.Node] = a.RedactKeys
		}
	}
	if told, ok := f.told[a.Node]; ok {
		an.x.Fill(&a.Attempt, told)
	}
}

// sends collects the HTTP client spans below an attempt, not crossing into other tool
// spans, in resend order. The walk is bounded by the span count.
func sends(t *grouping.Tree, root int32, isTool []bool) []toolspan.Send {
	var out []toolspan.Send
	stack := append([]int32(nil), t.Children(root)...)
	for steps := 0; len(stack) > 0 && steps < len(t.Nodes); steps++ {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if isTool[i] || i == root {
			continue
		}
		if transport(&t.Nodes[i]) {
			out = append(out, toolspan.ReadSend(t.Nodes[i].Span))
		}
		stack = append(stack, t.Children(i)...)
	}
	orderSends(out)
	return out
}

func (an *Analyzer) signals(out *Trace) {
	for i := range out.Tree.Nodes {
		if spanError(&out.Tree.Nodes[i]) {
			out.Signals.SpanError = true
			break
		}
	}
	out.unitSignals()
}

// unitSignals reads the signals of the trace's units and findings into its Signals.
func (out *Trace) unitSignals() {
	s := &out.Signals
	for _, u := range out.Units {
		s.Storm = s.Storm || u.Storm
		for _, a := range u.Attempts() {
			if a.Status.String() != "ok" {
				s.ToolError = true
			}
		}
	}
	for _, f := range out.Findings {
		if f.Kind == findings.IncompleteRecord {
			s.Incomplete = true
		} else {
			s.Divergence = true
		}
	}
	// A suspect may become a finding once the trace it copied is decided, after this one:
	// the trace is sampled as if it had the finding, so a finding found later finds it kept.
	for _, u := range out.Units {
		s.Divergence = s.Divergence || len(u.Suspects) > 0
	}
}

// countClamped adds a's clamped start and end to the counts.
func countClamped(a *toolspan.Attempt, starts, ends int) (int, int) {
	if a.Clamped&toolspan.FieldStart != 0 {
		starts++
	}
	if a.Clamped&toolspan.FieldEnd != 0 {
		ends++
	}
	return starts, ends
}
