package outcome

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestStatusStringAndFailed(t *testing.T) {
	cases := []struct {
		s      Status
		name   string
		failed bool
	}{
		{OK, "ok", false},
		{Error, "error", true},
		{Timeout, "timeout", true},
		{Unknown, "unknown", false},
		{Status(200), "unknown", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.name, c.s.String())
		assert.Equal(t, c.failed, c.s.Failed(), c.name)
	}
}

func TestNormalize(t *testing.T) {
	const (
		unset = ptrace.StatusCodeUnset
		ok    = ptrace.StatusCodeOk
		fail  = ptrace.StatusCodeError
	)
	explicit := func(v string) Evidence { return Evidence{Ended: true, Explicit: v, HasExplicit: true} }
	cases := []struct {
		name string
		ev   Evidence
		want Status
	}{
		// The instrumentation's own outcome field (`status` in the per-attempt record) decides
		// first.
		{"explicit ok", explicit("ok"), OK},
		{"explicit success", explicit("success"), OK},
		{"explicit succeeded", explicit("succeeded"), OK},
		{"explicit completed", explicit("completed"), OK},
		{"explicit OK upper case with spaces", explicit("  OK "), OK},
		{"explicit timeout", explicit("timeout"), Timeout},
		{"explicit Timed Out", explicit("Timed Out"), Timeout},
		{"explicit deadline_exceeded", explicit("deadline_exceeded"), Timeout},
		{"explicit error", explicit("error"), Error},
		{"explicit failed", explicit("failed"), Error},
		{"explicit garbage is an error", explicit("¯\\_(ツ)_/¯"), Error},
		{"explicit empty is unknown", explicit(""), Unknown},
		{"explicit blank is unknown", explicit("   "), Unknown},
		{"explicit ok with an isError result is an error", Evidence{Ended: true, Explicit: "ok", HasExplicit: true, ResultError: true, HasResult: true}, Error},
		{"explicit ok beats span status ERROR", Evidence{Ended: true, Explicit: "ok", HasExplicit: true, Code: fail, ErrorType: "x"}, OK},
		{"explicit error beats span status OK", Evidence{Ended: true, Explicit: "error", HasExplicit: true, Code: ok}, Error},
		{"explicit timeout with isError result stays timeout", Evidence{Ended: true, Explicit: "timeout", HasExplicit: true, ResultError: true}, Timeout},
		{"explicit ok but not ended is unknown", Evidence{Explicit: "ok", HasExplicit: true}, Unknown},

		{"not ended is unknown", Evidence{Code: fail}, Unknown},
		{"not ended with isError is unknown", Evidence{ResultError: true, HasResult: true}, Unknown},

		{"isError result with status unset", Evidence{Ended: true, ResultError: true, HasResult: true}, Error},
		{"isError result with status OK", Evidence{Ended: true, Code: ok, ResultError: true, HasResult: true}, Error},
		{"isError result whose text says timed out", Evidence{Ended: true, ResultError: true, HasResult: true, ResultText: "upstream timed out"}, Timeout},
		{"isError result with a timeout error.type", Evidence{Ended: true, ResultError: true, HasResult: true, ErrorType: "TimeoutError"}, Timeout},

		{"status ERROR", Evidence{Ended: true, Code: fail}, Error},
		{"status ERROR with a timeout message", Evidence{Ended: true, Code: fail, Message: "Request Timeout"}, Timeout},
		{"status ERROR with a deadline message", Evidence{Ended: true, Code: fail, Message: "context deadline exceeded"}, Timeout},
		{"status ERROR with error.type timeout", Evidence{Ended: true, Code: fail, ErrorType: "timeout"}, Timeout},
		{"status ERROR with error.type SocketTimeoutException", Evidence{Ended: true, Code: fail, ErrorType: "java.net.SocketTimeoutException"}, Timeout},
		{"status ERROR with an unrelated message", Evidence{Ended: true, Code: fail, Message: "503 Service Unavailable"}, Error},
		{"status ERROR with error.type unknown (Mastra)", Evidence{Ended: true, Code: fail, ErrorType: "unknown"}, Error},

		{"claude code success false", Evidence{Ended: true, Success: false, HasSuccess: true}, Error},
		{"claude code success false with a timeout message", Evidence{Ended: true, Success: false, HasSuccess: true, Message: "timed out"}, Timeout},
		{"claude code success true", Evidence{Ended: true, Success: true, HasSuccess: true}, OK},
		{"success false without HasSuccess is no signal", Evidence{Ended: true}, OK},

		{"error.type with status unset", Evidence{Ended: true, Code: unset, ErrorType: "tool_error"}, Error},
		{"error.type timeout with status unset", Evidence{Ended: true, Code: unset, ErrorType: "deadline_exceeded"}, Timeout},
		{"error.type with status OK is ok", Evidence{Ended: true, Code: ok, ErrorType: "tool_error"}, OK},

		{"unset with nothing is ok", Evidence{Ended: true}, OK},
		{"OK is ok", Evidence{Ended: true, Code: ok}, OK},
		{"OK with a timeout message is ok", Evidence{Ended: true, Code: ok, Message: "timeout"}, OK},
		{"unset with a non-error result is ok", Evidence{Ended: true, HasResult: true, ResultText: "done"}, OK},

		{"external side effect, unset, no result: unknown", Evidence{Ended: true, SideEffect: "external"}, Unknown},
		{"unknown side effect, unset, no result: unknown", Evidence{Ended: true, SideEffect: "unknown"}, Unknown},
		{"external side effect with a result: ok", Evidence{Ended: true, SideEffect: "external", HasResult: true}, OK},
		{"external side effect with status OK: ok", Evidence{Ended: true, SideEffect: "external", Code: ok}, OK},
		{"external side effect with success true: ok", Evidence{Ended: true, SideEffect: "external", HasSuccess: true, Success: true}, OK},
		{"external side effect with status ERROR: error", Evidence{Ended: true, SideEffect: "external", Code: fail}, Error},
		{"write side effect, unset, no result: ok", Evidence{Ended: true, SideEffect: "write"}, OK},
		{"side effect is matched as given (callers lowercase)", Evidence{Ended: true, SideEffect: "External"}, OK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want.String(), Normalize(c.ev).String())
		})
	}
}

func TestPlanRemap(t *testing.T) {
	const (
		unset = ptrace.StatusCodeUnset
		ok    = ptrace.StatusCodeOk
		fail  = ptrace.StatusCodeError
	)
	isErr := func(code ptrace.StatusCode) Evidence {
		return Evidence{Ended: true, Code: code, ResultError: true, HasResult: true, ResultText: "city not found"}
	}
	cases := []struct {
		name       string
		ev         Evidence
		errorType  bool
		overrideOK bool
		want       *Remap
	}{
		{"unset with isError: set error.type", isErr(unset), false, false, &Remap{SetErrorType: true, Description: "city not found"}},
		{"unset with isError and error.type present: keep it", isErr(unset), true, false, &Remap{SetErrorType: false, Description: "city not found"}},
		{"OK with isError, override on", isErr(ok), false, true, &Remap{SetErrorType: true, Description: "city not found"}},
		{"OK with isError, override on, error.type present", isErr(ok), true, true, &Remap{SetErrorType: false, Description: "city not found"}},
		{"OK with isError, override off", isErr(ok), false, false, nil},
		{"already ERROR", isErr(fail), false, true, nil},
		{"no isError, unset", Evidence{Ended: true, HasResult: true}, false, true, nil},
		{"no isError, OK", Evidence{Ended: true, Code: ok}, false, true, nil},
		{"no isError, error.type present", Evidence{Ended: true, ErrorType: "tool_error"}, true, true, nil},
		{"isError without text: empty description", Evidence{Ended: true, ResultError: true, HasResult: true}, false, true, &Remap{SetErrorType: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, PlanRemap(c.ev, c.errorType, c.overrideOK))
		})
	}
}
