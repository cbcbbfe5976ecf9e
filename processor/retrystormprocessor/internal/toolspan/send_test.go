package toolspan

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/outcome"
)

func TestIsTransport(t *testing.T) {
	cases := []struct {
		name  string
		kind  ptrace.SpanKind
		attrs map[string]any
		want  bool
	}{
		{"client with http.request.method", ptrace.SpanKindClient, map[string]any{"http.request.method": "POST"}, true},
		{"client with legacy http.method", ptrace.SpanKindClient, map[string]any{"http.method": "GET"}, true},
		{"server kind is not a send", ptrace.SpanKindServer, map[string]any{"http.request.method": "POST"}, false},
		{"internal kind is not a send", ptrace.SpanKindInternal, map[string]any{"http.request.method": "POST"}, false},
		{"unspecified kind is not a send", ptrace.SpanKindUnspecified, map[string]any{"http.method": "POST"}, false},
		{"client without an HTTP method", ptrace.SpanKindClient, map[string]any{"rpc.system": "grpc"}, false},
		{"client with a look-alike key", ptrace.SpanKindClient, map[string]any{"http.request.methods": "POST"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSpan(t, "POST", c.attrs)
			s.SetKind(c.kind)
			assert.Equal(t, c.want, IsTransport(s))
		})
	}
}

func TestReadSend(t *testing.T) {
	cases := []struct {
		name       string
		attrs      map[string]any
		code       ptrace.StatusCode
		message    string
		notEnded   bool
		wantNumber int64
		wantStatus outcome.Status
	}{
		{name: "no resend count, 200", attrs: map[string]any{"http.response.status_code": int64(200)}, wantNumber: 0, wantStatus: outcome.OK},
		{name: "first send", attrs: map[string]any{"http.request.resend_count": int64(0)}, wantNumber: 1, wantStatus: outcome.OK},
		{name: "third send", attrs: map[string]any{"http.request.resend_count": int64(2), "http.response.status_code": int64(200)}, wantNumber: 3, wantStatus: outcome.OK},
		{name: "resend count as a string", attrs: map[string]any{"http.request.resend_count": "1"}, wantNumber: 2, wantStatus: outcome.OK},
		{name: "negative resend count is unnumbered", attrs: map[string]any{"http.request.resend_count": int64(-1)}, wantNumber: 0, wantStatus: outcome.OK},
		{name: "garbage resend count is unnumbered", attrs: map[string]any{"http.request.resend_count": "abc"}, wantNumber: 0, wantStatus: outcome.OK},
		{name: "max int resend count does not overflow", attrs: map[string]any{"http.request.resend_count": int64(math.MaxInt64)}, wantNumber: 0, wantStatus: outcome.OK},
		{name: "503 fails the send", attrs: map[string]any{"http.response.status_code": int64(503)}, wantStatus: outcome.Error},
		{name: "503 as a string fails the send", attrs: map[string]any{"http.response.status_code": "503"}, wantStatus: outcome.Error},
		{name: "429 fails the send", attrs: map[string]any{"http.response.status_code": int64(429)}, wantStatus: outcome.Error},
		{name: "404 alone does not fail the send", attrs: map[string]any{"http.response.status_code": int64(404)}, wantStatus: outcome.OK},
		{name: "499 is not 5xx", attrs: map[string]any{"http.response.status_code": int64(499)}, wantStatus: outcome.OK},
		{name: "garbage status code", attrs: map[string]any{"http.response.status_code": "teapot"}, wantStatus: outcome.OK},
		{name: "status ERROR fails the send", code: ptrace.StatusCodeError, wantStatus: outcome.Error},
		{name: "timeout message", code: ptrace.StatusCodeError, message: "context deadline exceeded", wantStatus: outcome.Timeout},
		{name: "503 with a timeout message", attrs: map[string]any{"http.response.status_code": int64(504)}, message: "upstream timed out", wantStatus: outcome.Timeout},
		{name: "timeout error.type without status", attrs: map[string]any{"error.type": "TimeoutError"}, wantStatus: outcome.Timeout},
		{name: "error.type without status", attrs: map[string]any{"error.type": "java.net.ConnectException"}, wantStatus: outcome.Error},
		{name: "timeout message with status unset is ok", message: "timeout", wantStatus: outcome.OK},
		{name: "not ended is unknown", attrs: map[string]any{"http.request.resend_count": int64(1)}, notEnded: true, wantNumber: 2, wantStatus: outcome.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSpan(t, "POST", c.attrs)
			s.SetKind(ptrace.SpanKindClient)
			s.Status().SetCode(c.code)
			s.Status().SetMessage(c.message)
			if c.notEnded {
				s.SetEndTimestamp(0)
			}
			send := ReadSend(s)
			assert.Equal(t, c.wantNumber, send.Number)
			assert.Equal(t, c.wantStatus.String(), send.Status.String())
		})
	}
}
