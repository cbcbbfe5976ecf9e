package agenttraffic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// plannedIDsKey carries the ids of the span about to start. The SDK passes the Start context
// to its IDGenerator, so the ids travel with each Start call: one provider can replay from
// many goroutines with no lock and no ordering between them.
type plannedIDsKey struct{}

type plannedIDs struct {
	trace TraceID
	span  SpanID
}

// PlannedIDs returns an sdktrace.IDGenerator that hands out the ids Replay planned for each
// span, and random ids to spans started by anyone else.
func PlannedIDs() sdktrace.IDGenerator { return plannedIDGenerator{} }

type plannedIDGenerator struct{}

func (plannedIDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if p, ok := ctx.Value(plannedIDsKey{}).(plannedIDs); ok {
		return trace.TraceID(p.trace), trace.SpanID(p.span)
	}
	var tid trace.TraceID
	var sid trace.SpanID
	randomFill(tid[:])
	randomFill(sid[:])
	return tid, sid
}

func (plannedIDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if p, ok := ctx.Value(plannedIDsKey{}).(plannedIDs); ok {
		return trace.SpanID(p.span)
	}
	var sid trace.SpanID
	randomFill(sid[:])
	return sid
}

func randomFill(b []byte) {
	for i := range b {
		b[i] = byte(rand.UintN(256))
	}
	b[0] |= 1 // never all zero
}

// NewTracerProvider returns a provider fit for Replay: the service's resource, PlannedIDs,
// and every span sampled. opts (span processors, exporters) are applied after these.
func NewTracerProvider(service string, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	base := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
		sdktrace.WithIDGenerator(PlannedIDs()),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	}
	return sdktrace.NewTracerProvider(append(base, opts...)...)
}

// errUnplannedIDs means the provider was not built with PlannedIDs.
var errUnplannedIDs = errors.New("span ids differ from the plan: build the provider with PlannedIDs")

// Replay starts and ends every span of t through tp with the planned ids, parents, times,
// kinds, statuses, attributes and events. Map attributes become JSON strings (the SDK has no map
// type). The provider's resource, not t.Service, names the service.
func Replay(ctx context.Context, tp trace.TracerProvider, t *Trace) error {
	tracer := tp.Tracer(t.Scope)
	children := map[SpanID][]int{}
	var roots []int
	for i := range t.Spans {
		if t.Spans[i].Parent.IsZero() {
			roots = append(roots, i)
		} else {
			children[t.Spans[i].Parent] = append(children[t.Spans[i].Parent], i)
		}
	}
	r := replayer{tracer: tracer, trace: t, children: children}
	for _, i := range roots {
		r.span(ctx, i, true)
	}
	if r.err == nil && r.started != len(t.Spans) {
		r.err = fmt.Errorf("replay trace %s: %d of %d spans are not reachable from a root", t.ID, len(t.Spans)-r.started, len(t.Spans))
	}
	return r.err
}

type replayer struct {
	tracer   trace.Tracer
	trace    *Trace
	children map[SpanID][]int
	started  int
	err      error
}

// span replays span i and, inside its context, its children; the parent ends last, as in a
// live program, with its planned end time.
func (r *replayer) span(ctx context.Context, i int, root bool) {
	s := &r.trace.Spans[i]
	ctx, span, err := startPlanned(ctx, r.tracer, r.trace, i, root)
	r.started++
	if r.err == nil {
		r.err = err
	}
	for _, c := range r.children[s.ID] {
		r.span(ctx, c, false)
	}
	span.End(trace.WithTimestamp(s.End))
}

// startPlanned starts span i of t under ctx's span (a new root when root is set) with its
// planned ids, time, kind, attributes, status and events; the caller ends it.
func startPlanned(ctx context.Context, tracer trace.Tracer, t *Trace, i int, root bool) (context.Context, trace.Span, error) {
	s := &t.Spans[i]
	opts := []trace.SpanStartOption{trace.WithTimestamp(s.Start), trace.WithSpanKind(sdkKind(s.Kind)),
		trace.WithAttributes(sdkAttrs(s.Attrs)...)}
	if root {
		opts = append(opts, trace.WithNewRoot())
	}
	ctx = context.WithValue(ctx, plannedIDsKey{}, plannedIDs{trace: t.ID, span: s.ID})
	ctx, span := tracer.Start(ctx, s.Name, opts...)
	var err error
	if sc := span.SpanContext(); sc.TraceID() != trace.TraceID(t.ID) || sc.SpanID() != trace.SpanID(s.ID) {
		err = fmt.Errorf("replay span %s of trace %s: %w", s.ID, t.ID, errUnplannedIDs)
	}
	switch s.Status.Code {
	case StatusOK:
		span.SetStatus(codes.Ok, "")
	case StatusError:
		span.SetStatus(codes.Error, s.Status.Message)
	}
	for _, e := range s.Events {
		span.AddEvent(e.Name, trace.WithTimestamp(e.Time), trace.WithAttributes(sdkAttrs(e.Attrs)...))
	}
	return ctx, span, err
}

func sdkKind(k SpanKind) trace.SpanKind {
	switch k {
	case KindClient:
		return trace.SpanKindClient
	case KindServer:
		return trace.SpanKindServer
	}
	return trace.SpanKindInternal
}

func sdkAttrs(attrs []Attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		switch a.Value.Kind {
		case ValueString:
			out = append(out, attribute.String(a.Key, a.Value.Str))
		case ValueInt:
			out = append(out, attribute.Int64(a.Key, a.Value.Int))
		case ValueFloat:
			out = append(out, attribute.Float64(a.Key, a.Value.Float))
		case ValueBool:
			out = append(out, attribute.Bool(a.Key, a.Value.Bool))
		case ValueStrings:
			out = append(out, attribute.StringSlice(a.Key, a.Value.Strs))
		case ValueMap:
			out = append(out, attribute.String(a.Key, a.Value.JSON()))
		}
	}
	return out
}
