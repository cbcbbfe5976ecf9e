//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/retrystorm/retrystorm/internal/agenttraffic"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// startBackend runs the collector's own OTLP receiver (gRPC only) on 127.0.0.1:port in this
// process, as the tracing backend the collector under test exports to, with the 4 MiB
// request limit OTLP receivers have by default. It is shut down at cleanup.
func startBackend(t *testing.T, port int) *consumertest.TracesSink {
	t.Helper()
	sink := new(consumertest.TracesSink)
	startBackendConsumer(t, port, 0, sink)
	return sink
}

// startBackendConsumer is startBackend with any consumer behind the receiver, accepting
// requests up to maxRecvMiB (0: the default 4 MiB).
func startBackendConsumer(t *testing.T, port, maxRecvMiB int, next consumer.Traces) {
	t.Helper()
	factory, cfg := backendReceiver(port, maxRecvMiB)
	grpc := cfg.Protocols.GRPC.Get()
	rcv, err := factory.CreateTraces(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, next)
	if err != nil {
		t.Fatalf("create backend OTLP receiver: %v", err)
	}
	if err := rcv.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatalf("start backend OTLP receiver on %s: %v", grpc.NetAddr.Endpoint, err)
	}
	t.Cleanup(func() {
		if err := rcv.Shutdown(context.Background()); err != nil {
			t.Errorf("shut down backend OTLP receiver: %v", err)
		}
	})
}

// backendReceiver is the OTLP receiver of a backend: gRPC only, on port, accepting
// requests up to maxRecvMiB (0: the default 4 MiB).
func backendReceiver(port, maxRecvMiB int) (receiver.Factory, *otlpreceiver.Config) {
	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	grpc := configgrpc.NewDefaultServerConfig()
	grpc.NetAddr.Endpoint = loopback(port)
	if maxRecvMiB != 0 {
		grpc.MaxRecvMsgSizeMiB = maxRecvMiB
	}
	cfg.Protocols.GRPC = configoptional.Some(grpc)
	cfg.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	return factory, cfg
}

// Backend behaviours.
const (
	backendAccept int32 = iota
	backendRefuse       // answer UNAVAILABLE at once
	backendHang         // hold the call until the client gives up, then fail it
)

// faultyBackend is a tracing backend that accepts requests up to 64 MiB and can refuse or
// hang; what it accepts lands in sink.
type faultyBackend struct {
	mode     atomic.Int32
	refused  atomic.Int64
	hung     atomic.Int64
	accepted atomic.Int64
	sink     consumertest.TracesSink
}

var errBackendDown = errors.New("backend refuses: test fault")

func (b *faultyBackend) consume(ctx context.Context, td ptrace.Traces) error {
	switch b.mode.Load() {
	case backendRefuse:
		b.refused.Add(1)
		return errBackendDown
	case backendHang:
		b.hung.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(sendTimeout):
		}
		// Nothing is kept: the client timed out, so a kept copy would come back as a
		// duplicate of its retry.
		return errBackendDown
	}
	b.accepted.Add(1)
	return b.sink.ConsumeTraces(ctx, td)
}

func startFaultyBackend(t *testing.T, port int) *faultyBackend {
	t.Helper()
	b := &faultyBackend{}
	next, err := consumer.NewTraces(b.consume)
	if err != nil {
		t.Fatalf("create backend consumer: %v", err)
	}
	startBackendConsumer(t, port, 64, next)
	return b
}

// spanCounts counts what the sink received per trace id and per (trace, span) id, without
// copying spans.
func spanCounts(sink *consumertest.TracesSink) (perTrace map[string]int, perSpan map[[2]string]int) {
	perTrace, perSpan = map[string]int{}, map[[2]string]int{}
	for _, td := range sink.AllTraces() {
		for _, s := range tracespans.All(td) {
			tid := s.TraceID().String()
			perTrace[tid]++
			perSpan[[2]string{tid, s.SpanID().String()}]++
		}
	}
	return perTrace, perSpan
}

// backendTrace is what the backend received of one trace.
type backendTrace struct {
	spans map[string]ptrace.Span // by span id, the trace's own
	// late are the retrystorm.late_finding spans retry_storm added to the trace.
	late     []ptrace.Span
	root     ptrace.Span
	hasRoot  bool
	resource []located // strings of the resources and scopes the spans came under
}

// located is a string a backend could show, with where it was: "resource attribute
// service.name", "attribute gen_ai.input.messages", "event exception attribute
// exception.message", "name", "status message", "tracestate", "link attribute k".
type located struct {
	where, text string
}

// lateFindingSpan names the span retry_storm adds to a forwarded trace for a finding found
// after its decision.
const lateFindingSpan = "retrystorm.late_finding"

// backendTraces groups everything the sink received by trace id. Spans are copied, so the
// result does not alias the sink's batches.
func backendTraces(sink *consumertest.TracesSink) map[string]*backendTrace {
	out := map[string]*backendTrace{}
	for _, td := range sink.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rs := rss.At(i)
			sss := rs.ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				ss := sss.At(j)
				spans := ss.Spans()
				for k := 0; k < spans.Len(); k++ {
					span := ptrace.NewSpan()
					spans.At(k).CopyTo(span)
					id := span.TraceID().String()
					bt := out[id]
					if bt == nil {
						bt = &backendTrace{spans: map[string]ptrace.Span{}}
						out[id] = bt
					}
					if span.Name() == lateFindingSpan {
						bt.late = append(bt.late, span)
						continue
					}
					bt.spans[span.SpanID().String()] = span
					if span.ParentSpanID().IsEmpty() {
						bt.root, bt.hasRoot = span, true
					}
					bt.resource = appendMapLocated(bt.resource, "resource attribute ", rs.Resource().Attributes().AsRaw())
					bt.resource = appendMapLocated(bt.resource, "scope attribute ", ss.Scope().Attributes().AsRaw())
					bt.resource = append(bt.resource, located{"scope name", ss.Scope().Name()}, located{"scope version", ss.Scope().Version()})
				}
			}
		}
	}
	return out
}

// spanStrings lists every string a backend could show of a span: name, status message,
// tracestate, attributes (nested values included, numbers as written), event names and
// attributes, link tracestates and attributes.
func spanStrings(span ptrace.Span) []string {
	var out []string
	for _, l := range spanLocated(span) {
		out = append(out, l.text)
	}
	return out
}

// spanLocated is spanStrings with where each string sits in the span.
func spanLocated(span ptrace.Span) []located {
	out := []located{{"name", span.Name()}, {"status message", span.Status().Message()}, {"tracestate", span.TraceState().AsRaw()}}
	out = appendMapLocated(out, "attribute ", span.Attributes().AsRaw())
	for i := 0; i < span.Events().Len(); i++ {
		ev := span.Events().At(i)
		out = append(out, located{"event name", ev.Name()})
		out = appendMapLocated(out, "event "+ev.Name()+" attribute ", ev.Attributes().AsRaw())
	}
	for i := 0; i < span.Links().Len(); i++ {
		l := span.Links().At(i)
		out = append(out, located{"link tracestate", l.TraceState().AsRaw()})
		out = appendMapLocated(out, "link attribute ", l.Attributes().AsRaw())
	}
	return out
}

// appendMapLocated adds a map's keys and values; a nested value's place is its dotted
// path below the attribute (prefix + "k.sub").
func appendMapLocated(out []located, prefix string, m map[string]any) []located {
	for k, v := range m {
		out = append(out, located{prefix + "key", k})
		out = appendValueLocated(out, prefix+k, v)
	}
	return out
}

func appendValueLocated(out []located, where string, v any) []located {
	switch v := v.(type) {
	case string:
		out = append(out, located{where, v})
	case []byte:
		out = append(out, located{where, string(v)})
	case int64:
		out = append(out, located{where, strconv.FormatInt(v, 10)})
	case float64:
		out = append(out, located{where, strconv.FormatFloat(v, 'f', -1, 64)})
	case map[string]any:
		out = appendMapLocated(out, where+".", v)
	case []any:
		for _, e := range v {
			out = appendValueLocated(out, where+"[]", e)
		}
	}
	return out
}

// waitBackendHas waits until the sink holds every span of every trace a correct
// retry_storm keeps: the signal traces and the clean traces the threshold passes.
func waitBackendHas(t *testing.T, sink *consumertest.TracesSink, truth []agenttraffic.Truth, th sampling.Threshold) {
	t.Helper()
	want := map[string]int{}
	for _, tr := range truth {
		if tr.Keep || keepsClean(t, th, tr.TraceID) {
			want[tr.TraceID] = tr.Spans
		}
	}
	eventually(t, settleTimeout, "every kept trace whole in the backend", func() (bool, string) {
		perTrace, _ := spanCounts(sink)
		incomplete := 0
		for id, n := range want {
			if perTrace[id] < n {
				incomplete++
			}
		}
		return incomplete == 0, fmt.Sprintf("%d of %d kept traces still incomplete", incomplete, len(want))
	})
}
