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
// attributes (nested values included), event names and attributes, link attributes.
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
	case map[string]any:
		out = appendMapLocated(out, where+".", v)
	case []any:
		for _, e := range v {
			out = appendValueLocated(out, where+"[]", e)
		}
	}
	return out
}
