package toolspan

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

// Told is what the model's side of a call says of an attempt (package conversation): the
// request it answered and the response the model was given.
type Told struct {
	CallID string
	Tool   string
	// Args is the request's arguments as JSON text, when HasArgs.
	Args    string
	HasArgs bool
	// Result is the response's content as JSON text, when HasResult.
	Result    string
	HasResult bool
	// Failed: the response says the call failed.
	Failed bool
}

// ModelReport is the failure report of an attempt whose only failure signal is the
// response the model was given (an ADK tool that threw, a LangChain ToolMessage with
// status error): source=value, no payload.
const ModelReport = "model.tool_response=error"

// Fill completes a, read from its span, with what the model said of it: a call id, a tool
// name, the arguments' and the result's hashes where the span carries none of its own,
// and a failure the span does not show. Fields filled count as present.
func (x *Extractor) Fill(a *Attempt, told Told) {
	if a.CallID == "" && told.CallID != "" {
		a.CallID = told.CallID
		a.Present |= FieldCallID
		a.Told |= FieldCallID
	}
	if a.ToolName == "" && told.Tool != "" {
		a.ToolName = told.Tool
		a.Present |= FieldToolName
		a.Told |= FieldToolName
	}
	if a.ArgsHash == "" && told.HasArgs {
		a.ArgsHash = x.hasher.TextDigest(told.Args)
		a.Present |= FieldArgsHash
		a.Told |= FieldArgsHash
	}
	resultError, text := false, ""
	if a.ResultHash == "" && told.HasResult {
		a.ResultHash = x.hasher.TextDigest(told.Result)
		a.ResultFingerprint = payload.TextFingerprint(told.Result)
		a.Present |= FieldResultHash
		a.Told |= FieldResultHash
		resultError, text = outcome.ScanResult(pcommon.NewValueStr(told.Result))
	}
	if !told.Failed && !resultError || a.Status.Failed() || a.Status == outcome.Unknown || a.ExplicitStatus {
		return
	}
	errType, hasErrType := "", false
	if v, ok := a.Span.Attributes().Get(x.errorType.Key); ok {
		errType, hasErrType = v.AsString(), true
	}
	// A failure whose text names a timeout is one, as a recognised span's is.
	if !resultError {
		text = told.Result
	}
	a.Status = outcome.Failure(errType, text)
	a.Told |= FieldStatus
	code := a.Span.Status().Code()
	if code == ptrace.StatusCodeError || code == ptrace.StatusCodeOk && !x.overrideOK {
		return
	}
	if resultError {
		a.Remap = &outcome.Remap{SetErrorType: !hasErrType, Description: text}
		return
	}
	a.Remap = &outcome.Remap{SetErrorType: !hasErrType, Report: ModelReport}
}

// Identity reads what following the model matches a tool span by: its call id and tool
// name, as Extract reads them.
func (x *Extractor) Identity(span ptrace.Span) (callID, tool string) {
	var a Attempt
	x.readIdentity(&a, span.Name(), spanAttrs(span))
	return a.CallID, a.ToolName
}

// HasArgs reports whether an argument source is present on span.
func (x *Extractor) HasArgs(span ptrace.Span) bool {
	attrs := spanAttrs(span)
	if s, ok := x.firstString(attrs, x.argsHash); ok && s != "" {
		return true
	}
	for range x.argumentSources(attrs) {
		return true
	}
	return false
}

// IsPlaceholderID reports a call id that names no call: empty, bracketed ("<not
// specified>", which ADK Python writes on every failed call), or a language's null. Taken
// for an id, it would make one call of every failure that carries it.
func IsPlaceholderID(id string) bool {
	id = strings.TrimSpace(id)
	if id == "" || len(id) >= 2 && id[0] == '<' && id[len(id)-1] == '>' {
		return true
	}
	if len(id) > len("not specified") {
		return false
	}
	for _, p := range placeholderIDs {
		if strings.EqualFold(id, p) {
			return true
		}
	}
	return false
}

// placeholderIDs are the words an SDK writes for an id it does not have.
var placeholderIDs = [...]string{"none", "null", "nil", "undefined", "unknown", "n/a", "not specified"}

// ReadByRole reads the payload of a span no recognition rule names, which following the
// model found (an unknown framework's tool span): its arguments and result from the
// attributes named as message structures name them, a key whose last segment (after '.',
// ':' or '/'; before a trailing "value") is an argument member (arguments, args, input,
// toolInput) or a result member (output, result, response, results). Those keys join
// a.RedactKeys: they are the span's raw payload.
func (x *Extractor) ReadByRole(a *Attempt) {
	a.Followed = true
	var told Told
	for k, v := range a.Span.Attributes().All() {
		switch PayloadRole(k) {
		case "arguments":
			if !told.HasArgs {
				told.Args, told.HasArgs = v.AsString(), true
			}
		case "result":
			if !told.HasResult {
				told.Result, told.HasResult = v.AsString(), true
			}
		default:
			continue
		}
		a.RedactKeys = append(a.RedactKeys, k)
	}
	x.Fill(a, told)
}

// PayloadRole says which payload a tool span's attribute holds by its key's role, as
// ReadByRole reads a span no rule names: "arguments", "result", or "".
func PayloadRole(key string) string {
	switch roleSegment(key) {
	case "arguments", "args", "input", "toolInput":
		return "arguments"
	case "output", "result", "response", "results":
		return "result"
	}
	return ""
}

// roleSegment is the segment of key that names its role: the last one after '.', ':' or
// '/', or the one before a last "value" (OpenInference's input.value).
func roleSegment(key string) string {
	i := strings.LastIndexAny(key, ".:/")
	seg := key[i+1:]
	if seg == "value" && i > 0 {
		rest := key[:i]
		seg = rest[strings.LastIndexAny(rest, ".:/")+1:]
	}
	return seg
}

// FailFrom fails a, whose own span says it succeeded, with status, planning the remap of
// its span with the failure report (source=value, no payload) when the span does not say
// ERROR (and says OK only where override_ok allows).
func (x *Extractor) FailFrom(a *Attempt, status outcome.Status, report string) {
	a.Status = status
	code := a.Span.Status().Code()
	if code == ptrace.StatusCodeError || code == ptrace.StatusCodeOk && !x.overrideOK {
		return
	}
	_, hasErrType := a.Span.Attributes().Get(x.errorType.Key)
	a.Remap = &outcome.Remap{SetErrorType: !hasErrType, Report: report}
}
