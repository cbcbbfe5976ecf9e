package agenttraffic

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/retrystorm/retrystorm/internal/tracespans"
)

func TestPiecesAreInEndOrderWithTheRootLast(t *testing.T) {
	traces := generate(t, Config{Seed: 5, EveryScenario: true}, 16)
	for i := range traces {
		tr := &traces[i]
		for _, n := range []int{1, 3, 1000} {
			pieces := Pieces(tr, n)
			if want := min(n, len(tr.Spans)); len(pieces) != want {
				t.Fatalf("trace %s in %d pieces: got %d", tr.ID, n, len(pieces))
			}
			seen := map[int]bool{}
			var last *Span
			for k, piece := range pieces {
				if len(piece) == 0 {
					t.Fatalf("trace %s: piece %d of %d is empty", tr.ID, k, n)
				}
				for _, j := range piece {
					s := &tr.Spans[j]
					if seen[j] {
						t.Fatalf("trace %s: span %d sent twice", tr.ID, j)
					}
					seen[j] = true
					if s.Parent.IsZero() && k != len(pieces)-1 {
						t.Errorf("trace %s: the root is in piece %d of %d, not the last", tr.ID, k, len(pieces))
					}
					if last != nil && !last.Parent.IsZero() && !s.Parent.IsZero() && s.End.Before(last.End) {
						t.Errorf("trace %s: span %q ends before %q, sent before it", tr.ID, s.Name, last.Name)
					}
					last = s
				}
			}
			if len(seen) != len(tr.Spans) {
				t.Fatalf("trace %s: %d of %d spans sent", tr.ID, len(seen), len(tr.Spans))
			}
		}
	}
}

func TestPieceToPdataHoldsThePieceUnderTheTracesResource(t *testing.T) {
	tr := generate(t, Config{Seed: 6}, 1)[0]
	pieces := Pieces(&tr, 2)
	td := PieceToPdata(&tr, pieces[1])
	if td.SpanCount() != len(pieces[1]) {
		t.Fatalf("request holds %d spans, the piece %d", td.SpanCount(), len(pieces[1]))
	}
	svc, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("service.name")
	if svc.Str() != tr.Service {
		t.Errorf("service.name %q, want %q", svc.Str(), tr.Service)
	}
	k := 0
	for _, span := range tracespans.All(td) {
		if span.SpanID() != [8]byte(tr.Spans[pieces[1][k]].ID) {
			t.Errorf("span %d of the request is not the piece's", k)
		}
		k++
	}
}

// Each piece reaches the exporter only once the previous ones have, with the plan's ids,
// parents and times.
func TestReplayInPiecesExportsPieceByPiece(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := NewTracerProvider("checkout-agent", sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := generate(t, Config{Seed: 7}, 1)[0]
	pieces := Pieces(&tr, 3)
	var seen []int
	err := ReplayInPieces(context.Background(), tp, &tr, 3, func(piece int) error {
		seen = append(seen, len(exp.GetSpans()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{len(pieces[0]), len(pieces[0]) + len(pieces[1])}; len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("spans exported after each piece %v, want %v", seen, want)
	}
	got := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		got[s.SpanContext.SpanID()] = s
	}
	if len(got) != len(tr.Spans) {
		t.Fatalf("exported %d spans, want %d", len(got), len(tr.Spans))
	}
	for j := range tr.Spans {
		checkReplayedSpan(t, &tr, &tr.Spans[j], got[trace.SpanID(tr.Spans[j].ID)])
	}
}
