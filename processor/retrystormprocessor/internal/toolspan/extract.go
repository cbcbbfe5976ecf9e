package toolspan

import (
	"iter"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// Extractor recognises tool spans and reads attempts. It holds a hasher and is not safe
// for concurrent use: make one per goroutine.
type Extractor struct {
	cfg        Config
	callID     []source
	attempt    []source
	toolName   []source
	arguments  []source
	result     []source
	argsHash   []source
	resultHash []source
	idemKey    []source
	idemHash   []source
	runID      []source
	tokensIn   []source
	tokensOut  []source
	sideEffect []source
	status     []source
	success    []source
	toolStatus []source
	readAsset  []source
	redactKeys []source
	errorType  source
	index      *attrIndex
	recognizer recognizer
	// notTools are the not_tool_spans rules: matched spans are no attempt.
	notTools   recognizer
	agents     recognizer
	hasher     *payload.Hasher
	overrideOK bool
}

// NewExtractor compiles cfg. key is the HMAC key (empty: plain SHA-256); overrideOK lets an
// isError result turn an explicit OK status into ERROR.
func NewExtractor(cfg Config, key []byte, overrideOK bool) *Extractor {
	s := cfg.Sources
	x := &Extractor{
		cfg:        cfg,
		callID:     parseSources(s.CallID),
		attempt:    parseSources(s.Attempt),
		toolName:   parseSources(s.ToolName),
		arguments:  parseSources(s.Arguments),
		result:     parseSources(s.Result),
		argsHash:   parseSources(s.ArgsHash),
		resultHash: parseSources(s.ResultHash),
		idemKey:    parseSources(s.IdempotencyKey),
		idemHash:   parseSources(s.IdemHash),
		runID:      parseSources(s.RunID),
		tokensIn:   parseSources(s.TokensIn),
		tokensOut:  parseSources(s.TokensOut),
		sideEffect: parseSources(s.SideEffect),
		status:     parseSources(s.Status),
		success:    parseSources(s.Success),
		toolStatus: parseSources(s.ToolStatus),
		readAsset:  parseSources(s.ReadAsset),
		redactKeys: parseSources(attrsource.RawKeys(s.Payload()...)),
		errorType:  source{Source: attrsource.Source{Key: "error.type"}},
		index:      &attrIndex{ids: map[string]int32{}},
		recognizer: newRecognizer(cfg.ToolSpans),
		notTools:   newRecognizer(cfg.NotToolSpans),
		agents:     newRecognizer(cfg.AgentSpans),
		hasher:     payload.NewHasher(key),
		overrideOK: overrideOK,
	}
	for _, list := range [][]source{x.callID, x.attempt, x.toolName, x.arguments, x.result, x.argsHash,
		x.resultHash, x.idemKey, x.idemHash, x.runID, x.tokensIn, x.tokensOut, x.sideEffect, x.status,
		x.success, x.toolStatus, x.readAsset, x.redactKeys} {
		for i := range list {
			if list[i].Event == "" {
				list[i].id = x.index.register(list[i].Key)
			}
		}
	}
	x.errorType.id = x.index.register(x.errorType.Key)
	return x
}

// RunID reads the run id sources from any span (an agent span carries it for its tools).
func (x *Extractor) RunID(span ptrace.Span) string {
	s, _ := x.firstString(spanAttrs(span), x.runID)
	return s
}

// ReadAsset reads the asset a span read, from any span.
func (x *Extractor) ReadAsset(span ptrace.Span) string {
	s, _ := x.firstString(spanAttrs(span), x.readAsset)
	return s
}

// Extract reads an attempt from a recognised tool span.
func (x *Extractor) Extract(span ptrace.Span, res pcommon.Resource) Attempt {
	at := x.index.load(span)
	a := Attempt{
		Span: span, Resource: res,
		SpanID: span.SpanID(), ParentID: span.ParentSpanID(),
	}
	a.setTimes(span)
	x.readIdentity(&a, span.Name(), at)
	x.readHashes(&a, at)
	x.readCosts(&a, at)
	x.readOutcome(&a, span, at)
	for _, k := range x.redactKeys {
		if _, ok := at.get(k); ok {
			a.RedactKeys = append(a.RedactKeys, k.Key)
		}
	}
	return a
}

func (x *Extractor) readIdentity(a *Attempt, spanName string, attrs attrs) {
	if s, ok := x.firstString(attrs, x.toolName); ok && s != "" {
		a.ToolName = s
	} else {
		a.ToolName = x.toolNameFromSpanName(spanName)
	}
	if a.ToolName != "" {
		a.Present |= FieldToolName
	}
	if s, ok := x.firstString(attrs, x.callID); ok && !IsPlaceholderID(s) {
		a.CallID = s
		a.Present |= FieldCallID
	}
	if s, ok := x.firstString(attrs, x.runID); ok && s != "" {
		a.RunID = s
		a.Present |= FieldRunID
	}
	if v, ok := x.first(attrs, x.attempt); ok {
		a.Number = parseAttemptNumber(v)
		// An unusable number is a missing one: incomplete when its siblings carry theirs.
		if !a.Number.Invalid {
			a.Present |= FieldAttempt
		}
	}
	a.ReadAsset, _ = x.firstString(attrs, x.readAsset)
}

func (x *Extractor) toolNameFromSpanName(name string) string {
	for _, p := range x.cfg.ToolNamePrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" {
			return strings.TrimSpace(rest)
		}
	}
	for _, sfx := range x.cfg.ToolNameSuffixes {
		if rest, ok := strings.CutSuffix(name, sfx); ok && rest != "" {
			return rest
		}
	}
	return ""
}

func (x *Extractor) readHashes(a *Attempt, attrs attrs) {
	if s, ok := x.firstString(attrs, x.argsHash); ok && s != "" {
		a.ArgsHash = s
	} else if h, ok := x.firstDigest(x.argumentSources(attrs)); ok {
		a.ArgsHash = h
	}
	a.ResultHash, a.ResultFingerprint = x.resultDigest(attrs, true)
	if s, ok := x.firstString(attrs, x.idemHash); ok && s != "" {
		a.IdemHash = s
	} else if s, ok := x.firstString(attrs, x.idemKey); ok && s != "" {
		a.IdemHash = x.hasher.RawDigest(s)
	}
	if a.ArgsHash != "" {
		a.Present |= FieldArgsHash
	}
	if a.ResultHash != "" {
		a.Present |= FieldResultHash
	}
	if a.IdemHash != "" {
		a.Present |= FieldIdemHash
	}
}

func (x *Extractor) readCosts(a *Attempt, attrs attrs) {
	if v, ok := x.first(attrs, x.tokensIn); ok {
		if n, ok := parseCount(v); ok {
			a.TokensIn = n
			a.Present |= FieldTokensIn
		}
	}
	if v, ok := x.first(attrs, x.tokensOut); ok {
		if n, ok := parseCount(v); ok {
			a.TokensOut = n
			a.Present |= FieldTokensOut
		}
	}
	if s, ok := x.firstString(attrs, x.sideEffect); ok && s != "" {
		a.SideEffect = strings.ToLower(s)
		a.Present |= FieldSideEffect
	}
}

func (x *Extractor) readOutcome(a *Attempt, span ptrace.Span, at attrs) {
	ev, hasErrType := x.evidence(a, span, at, true)
	a.Status = outcome.Normalize(ev)
	a.Remap = outcome.PlanRemap(ev, hasErrType, x.overrideOK)
}

// evidence gathers what span says about its outcome into ev and sets a.ExplicitStatus and
// the status field bit. The result payload is scanned for an isError flag only when scan
// is set; otherwise ev.ResultError stays false.
func (x *Extractor) evidence(a *Attempt, span ptrace.Span, attrs attrs, scan bool) (ev outcome.Evidence, hasErrType bool) {
	st := span.Status()
	ev = outcome.Evidence{
		Code:       st.Code(),
		Message:    st.Message(),
		Ended:      a.End != 0 && a.End >= a.Start,
		SideEffect: a.SideEffect,
	}
	errType, hasErrType := attrs.get(x.errorType)
	if hasErrType {
		ev.ErrorType = errType.AsString()
	}
	// Unlike other fields, an empty outcome field is meaningful: the outcome was never
	// recorded, so presence alone counts.
	if v, ok := x.first(attrs, x.status); ok {
		ev.Explicit, ev.HasExplicit = v.AsString(), true
		a.ExplicitStatus = true
		// Only the explicit outcome field counts as carrying a status: OTel SDKs leave a
		// success UNSET, which is not a missing field.
		a.Present |= FieldStatus
	}
	if v, ok := x.first(attrs, x.success); ok {
		ev.HasSuccess = true
		ev.Success = v.Type() == pcommon.ValueTypeBool && v.Bool() || strings.EqualFold(v.AsString(), "true")
	}
	ev.ToolReport = x.toolReport(attrs)
	if v, ok := x.resultValue(attrs); ok {
		ev.HasResult = true
		if scan {
			ev.ResultError, ev.ResultText = outcome.ScanResult(v)
		}
	}
	return ev, hasErrType
}

// toolReport is the first tool_status source present, as source=value, when its value is
// one of the tool error values; "" otherwise.
func (x *Extractor) toolReport(attrs attrs) string {
	for _, src := range x.toolStatus {
		v, ok := attrs.get(src)
		if !ok {
			continue
		}
		s, ok := v.AsString(), true
		if len(src.Path) > 0 {
			s, ok = x.hasher.StringField(v, src.Path)
		}
		if !ok {
			continue
		}
		for _, bad := range x.cfg.ToolErrorValues {
			if strings.EqualFold(strings.TrimSpace(s), strings.TrimSpace(bad)) {
				return src.String() + "=" + strings.TrimSpace(s)
			}
		}
		return ""
	}
	return ""
}

// HashedText is a text whose copies in messages carry an attempt's hash (HashedTexts).
type HashedText struct {
	Text string
	// Listed says the hash is that of a list holding Text alone, not Text's own digest: a
	// copy hashed by itself would not carry it.
	Listed bool
}

// HashedTexts returns the texts whose copies in messages carry an attempt's ArgsHash and
// ResultHash, empty where there is none or a hash was given instead: the first argument or
// result source present, when it is a string read whole (the hash is its Hasher.TextDigest
// digest), a string element read at a path (the same), or an array element holding exactly
// one string (Listed). That last is how an SDK records a call's positional arguments:
// OpenLLMetry writes a LangChain tool's arguments as {"args":["<JSON>"]}, and the model's
// tool call that messages copy is the one string, so its copies carry the hash of the
// array. Redaction marks copies of the text with the hash without hashing it again.
func (x *Extractor) HashedTexts(a *Attempt) (args, result HashedText) {
	attrs := spanAttrs(a.Span)
	if a.ArgsHash != "" {
		if s, ok := x.firstString(attrs, x.argsHash); !ok || s == "" {
			args = x.copiedText(x.argumentSources(attrs))
		}
	}
	if a.ResultHash != "" {
		if s, ok := x.firstString(attrs, x.resultHash); !ok || s == "" {
			result = x.copiedText(presentSources(attrs, x.result))
		}
	}
	return args, result
}

// copiedText is the text copies of the first of sources are of (HashedTexts), empty when
// it is neither a string nor an array of one string.
func (x *Extractor) copiedText(sources iter.Seq2[pcommon.Value, source]) HashedText {
	for v, src := range sources {
		if len(src.Path) == 0 {
			if v.Type() == pcommon.ValueTypeStr {
				return HashedText{Text: v.Str()}
			}
			return HashedText{}
		}
		// A path source that is absent falls through, as the hash does; one present decides.
		if s, listed, present := x.hasher.CopiedText(v, src.Path); present {
			return HashedText{Text: s, Listed: listed && s != ""}
		}
	}
	return HashedText{}
}

// resultValue is the first present result source's attribute, the payload the isError
// flag is looked for in.
func (x *Extractor) resultValue(attrs attrs) (pcommon.Value, bool) {
	for _, src := range x.result {
		if v, ok := attrs.get(src); ok {
			return v, true
		}
	}
	return pcommon.Value{}, false
}

func (x *Extractor) first(attrs attrs, srcs []source) (pcommon.Value, bool) {
	for _, src := range srcs {
		if v, ok := attrs.get(src); ok && len(src.Path) == 0 {
			return v, true
		}
	}
	return pcommon.Value{}, false
}

// firstString reads the first present source as a string; path sources yield the JSON
// string element at the path.
func (x *Extractor) firstString(attrs attrs, srcs []source) (string, bool) {
	for _, src := range srcs {
		v, ok := attrs.get(src)
		if !ok {
			continue
		}
		if len(src.Path) == 0 {
			// An empty value says nothing: fall through to the next source.
			if s := v.AsString(); s != "" {
				return s, true
			}
			continue
		}
		if s, ok := x.hasher.StringField(v, src.Path); ok {
			return s, true
		}
	}
	return "", false
}

func (x *Extractor) firstDigest(sources iter.Seq2[pcommon.Value, source]) (string, bool) {
	for v, src := range sources {
		if h, ok := x.hasher.PayloadDigest(v, src.Path); ok {
			return h, true
		}
	}
	return "", false
}

// argumentSources yields the argument sources present in attrs in the order they are
// tried: those whose element holds something, in their configured order, then those whose
// element is empty ({}, [] or "", Hasher.EmptyField), in theirs. An empty element says
// nothing of the call when another source says something: OpenLLMetry records a function's
// arguments as {"args":[…],"kwargs":{}} when positional and {"args":[],"kwargs":{…}} when
// one object, so whichever of args and kwargs holds them is read; a call with none still
// hashes its empty arguments, as before.
func (x *Extractor) argumentSources(attrs attrs) iter.Seq2[pcommon.Value, source] {
	return func(yield func(pcommon.Value, source) bool) {
		empty := false
		for _, src := range x.arguments {
			v, ok := attrs.get(src)
			if !ok {
				continue
			}
			if x.hasher.EmptyField(v, src.Path) {
				empty = true
				continue
			}
			if !yield(v, src) {
				return
			}
		}
		if !empty {
			return
		}
		for _, src := range x.arguments {
			if v, ok := attrs.get(src); ok && x.hasher.EmptyField(v, src.Path) {
				if !yield(v, src) {
					return
				}
			}
		}
	}
}

// presentSources yields the sources of srcs present in attrs, in order.
func presentSources(attrs attrs, srcs []source) iter.Seq2[pcommon.Value, source] {
	return func(yield func(pcommon.Value, source) bool) {
		for _, src := range srcs {
			if v, ok := attrs.get(src); ok && !yield(v, src) {
				return
			}
		}
	}
}

// parseAttemptNumber accepts ints, integral doubles and strings holding integers; anything
// else (negative, zero, "abc", NaN, overflowing) is marked invalid and numbered by order.
func parseAttemptNumber(v pcommon.Value) AttemptNumber {
	n, ok := parseCount(v)
	if !ok || n < 1 {
		return AttemptNumber{Set: true, Invalid: true}
	}
	return AttemptNumber{Value: n, Set: true}
}

func parseCount(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), v.Int() >= 0
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if f != math.Trunc(f) || f < 0 || f > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case pcommon.ValueTypeStr:
		n, err := strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64)
		return n, err == nil && n >= 0
	}
	return 0, false
}

// IsTransport reports an HTTP client span: a wire send under an attempt.
func IsTransport(span ptrace.Span) bool {
	if span.Kind() != ptrace.SpanKindClient {
		return false
	}
	attrs := span.Attributes()
	_, ok := attrs.Get("http.request.method")
	if !ok {
		_, ok = attrs.Get("http.method")
	}
	return ok
}

// ReadSend reads a transport try: resend_count+1 numbers it; 5xx, 429 or ERROR fail it.
func ReadSend(span ptrace.Span) Send {
	s := Send{Span: span, Number: 0}
	attrs := span.Attributes()
	if v, ok := attrs.Get("http.request.resend_count"); ok {
		if n, ok := parseCount(v); ok && n < math.MaxInt64 {
			s.Number = n + 1
		}
	}
	ev := outcome.Evidence{Code: span.Status().Code(), Message: span.Status().Message(), Ended: span.EndTimestamp() != 0, HasResult: true}
	if v, ok := attrs.Get("error.type"); ok {
		ev.ErrorType = v.AsString()
	}
	code, ok := attrs.Get("http.response.status_code")
	if !ok {
		code, ok = attrs.Get("http.status_code") // pre-1.23 HTTP semconv
	}
	if v := code; ok {
		if code, ok := parseCount(v); ok && (code >= 500 || code == 429) && ev.Code != ptrace.StatusCodeError {
			ev.Code = ptrace.StatusCodeError
		}
	}
	s.Status = outcome.Normalize(ev)
	return s
}
