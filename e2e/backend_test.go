//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// startBackend runs the collector's own OTLP receiver (gRPC only) on 127.0.0.1:port in this
// process, as the tracing backend the collector under test exports to. It is shut down at
// cleanup.
func startBackend(t *testing.T, port int) *consumertest.TracesSink {
	t.Helper()
	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	grpc := configgrpc.NewDefaultServerConfig()
	grpc.NetAddr.Endpoint = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Protocols.GRPC = configoptional.Some(grpc)
	cfg.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	sink := new(consumertest.TracesSink)
	rcv, err := factory.CreateTraces(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, sink)
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
	return sink
}

// backendTrace is what the backend received of one trace.
type backendTrace struct {
	spans    map[string]ptrace.Span // by span id
	root     ptrace.Span
	hasRoot  bool
	resource []string // string values of the resources and scopes the spans came under
}

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
					bt.spans[span.SpanID().String()] = span
					if span.ParentSpanID().IsEmpty() {
						bt.root, bt.hasRoot = span, true
					}
					bt.resource = appendMapStrings(bt.resource, rs.Resource().Attributes().AsRaw())
					bt.resource = appendMapStrings(bt.resource, ss.Scope().Attributes().AsRaw())
				}
			}
		}
	}
	return out
}

// spanStrings lists every string a backend could show of a span: name, status message,
// attributes (nested values included), event names and attributes, link attributes.
func spanStrings(span ptrace.Span) []string {
	out := []string{span.Name(), span.Status().Message(), span.TraceState().AsRaw()}
	out = appendMapStrings(out, span.Attributes().AsRaw())
	for i := 0; i < span.Events().Len(); i++ {
		ev := span.Events().At(i)
		out = append(out, ev.Name())
		out = appendMapStrings(out, ev.Attributes().AsRaw())
	}
	for i := 0; i < span.Links().Len(); i++ {
		out = appendMapStrings(out, span.Links().At(i).Attributes().AsRaw())
	}
	return out
}

func appendMapStrings(out []string, m map[string]any) []string {
	for k, v := range m {
		out = append(out, k)
		out = appendValueStrings(out, v)
	}
	return out
}

func appendValueStrings(out []string, v any) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []byte:
		out = append(out, string(v))
	case map[string]any:
		out = appendMapStrings(out, v)
	case []any:
		for _, e := range v {
			out = appendValueStrings(out, e)
		}
	}
	return out
}
