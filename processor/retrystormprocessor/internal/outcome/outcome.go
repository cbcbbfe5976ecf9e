// Package outcome normalises what an attempt's span says about its result into one status
// (ok, error, timeout, unknown) and plans the span change for MCP isError results.
package outcome // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Status is an attempt's normalised outcome.
type Status uint8

const (
	OK Status = iota
	Error
	Timeout
	Unknown
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Error:
		return "error"
	case Timeout:
		return "timeout"
	default:
		return "unknown"
	}
}

// Failed reports an attempt that ran and did not succeed.
func (s Status) Failed() bool { return s == Error || s == Timeout }

// Evidence is everything a span carries about an attempt's outcome.
type Evidence struct {
	Code      ptrace.StatusCode
	Message   string
	ErrorType string
	// Explicit is the instrumentation's own outcome field (`status` in the per-attempt record).
	Explicit    string
	HasExplicit bool
	// Success is Claude Code's `success` flag.
	Success    bool
	HasSuccess bool
	// ResultError is an isError / is_error flag found in the result payload.
	ResultError bool
	ResultText  string
	HasResult   bool
	// ToolReport is the tool's own report that it failed (`gen_ai.tool.status=error`, say),
	// as source=value; "" when it made none. It counts like an isError result.
	ToolReport string
	Ended      bool
	SideEffect string
}

// Normalize maps evidence to a status. An attempt that never ended, or whose explicit
// outcome field is empty, is unknown; so is one with an external or unknown side effect,
// no status and no result: an attempt whose outcome nobody recorded is listed as such,
// never tidied away.
func Normalize(e Evidence) Status {
	if !e.Ended {
		return Unknown
	}
	if e.HasExplicit {
		return explicitStatus(e)
	}
	switch {
	case e.ResultError:
		// The result text becomes the span's status message once remapped.
		return failure(e.ErrorType, e.ResultText)
	case e.ToolReport != "":
		return failure(e.ErrorType, e.Message)
	case e.Code == ptrace.StatusCodeError:
		return failure(e.ErrorType, e.Message)
	case e.HasSuccess && !e.Success:
		return failure(e.ErrorType, e.Message)
	case e.ErrorType != "" && e.Code != ptrace.StatusCodeOk:
		return failure(e.ErrorType, e.Message)
	case e.Code == ptrace.StatusCodeUnset && !e.HasResult && !e.HasSuccess && sideEffectPending(e.SideEffect):
		return Unknown
	}
	return OK
}

func explicitStatus(e Evidence) Status {
	v := strings.ToLower(strings.TrimSpace(e.Explicit))
	switch {
	case v == "":
		return Unknown
	case isTimeout(v):
		return Timeout
	case v == "ok" || v == "success" || v == "succeeded" || v == "completed":
		if e.ResultError || e.ToolReport != "" {
			return Error
		}
		return OK
	}
	return Error
}

func sideEffectPending(s string) bool {
	return s == "unknown" || s == "external"
}

// Failure is the status of a failed attempt: a timeout when its error type or message says
// so (timeout, timed out, deadline), else an error.
func Failure(errorType, message string) Status { return failure(errorType, message) }

func failure(errorType, message string) Status {
	if isTimeout(strings.ToLower(errorType)) || isTimeout(strings.ToLower(message)) {
		return Timeout
	}
	return Error
}

func isTimeout(lower string) bool {
	return strings.Contains(lower, "timeout") || strings.Contains(lower, "timed out") ||
		strings.Contains(lower, "deadline")
}

// ToolErrorType is the error.type value for an isError result (OTel MCP semconv).
const ToolErrorType = "tool_error"

// Remap is the span change for an attempt whose result, or the tool's own report, says
// the tool failed while its span status does not.
type Remap struct {
	// SetErrorType is true when error.type is absent and must be set to tool_error.
	SetErrorType bool
	// Description is the isError result's text: payload, withheld under redaction.
	Description string
	// Report is the tool's own failure report (source=value), no payload; "" for an
	// isError result.
	Report string
}

// PlanRemap returns the change to apply, or nil when the span already says ERROR, has no
// isError result and no failure report, or says OK and overrideOK is off.
func PlanRemap(e Evidence, errorTypePresent, overrideOK bool) *Remap {
	if !e.ResultError && e.ToolReport == "" || e.Code == ptrace.StatusCodeError {
		return nil
	}
	if e.Code == ptrace.StatusCodeOk && !overrideOK {
		return nil
	}
	if e.ResultError {
		return &Remap{SetErrorType: !errorTypePresent, Description: e.ResultText}
	}
	return &Remap{SetErrorType: !errorTypePresent, Report: e.ToolReport}
}
