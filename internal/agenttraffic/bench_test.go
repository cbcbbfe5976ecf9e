package agenttraffic

import "testing"

func BenchmarkGenerate(b *testing.B) {
	gen, err := NewGenerator(Config{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		gen.Next()
	}
}

func BenchmarkToPdata(b *testing.B) {
	traces := generate(b, Config{Seed: 1}, 100)
	b.ReportAllocs()
	for b.Loop() {
		ToPdata(traces)
	}
}
