package payload

import (
	"strings"
	"testing"
)

func plainEndByByte(s string, i int) int {
	for i < len(s) && plain(s[i]) {
		i++
	}
	return i
}

func FuzzPlainEnd(f *testing.F) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi\"", "abc\x00defghijk", "hello world, 12345678\\n",
		"\x7fabcdefgh", "abcdefg\x80", "é" + strings.Repeat("x", 20), strings.Repeat("plain text ", 9) + "\x1f"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, s string, i int) {
		if i < 0 || i > len(s) {
			i = 0
		}
		if got, want := plainEnd(s, i), plainEndByByte(s, i); got != want {
			t.Fatalf("plainEnd(%q, %d) = %d, want %d", s, i, got, want)
		}
		if got, want := plainEnd([]byte(s), i), plainEndByByte(s, i); got != want {
			t.Fatalf("plainEnd([]byte(%q), %d) = %d, want %d", s, i, got, want)
		}
	})
}

// TestPlainEndEveryByte puts each byte value at each position of a run of plain bytes.
func TestPlainEndEveryByte(t *testing.T) {
	for b := range 256 {
		for pos := range 17 {
			s := []byte(strings.Repeat("k", 17))
			s[pos] = byte(b)
			want := 17
			if !plain(byte(b)) {
				want = pos
			}
			if got := plainEnd(s, 0); got != want {
				t.Fatalf("byte %#x at %d: plainEnd = %d, want %d", b, pos, got, want)
			}
		}
	}
}

var snippet = strings.Repeat("account budget customer refund freshness settlement delay ", 3)

func BenchmarkPlainEnd(b *testing.B) {
	b.SetBytes(int64(len(snippet)))
	for b.Loop() {
		if plainEnd(snippet, 0) != len(snippet) {
			b.Fatal("stopped")
		}
	}
}

func BenchmarkPlainEndByByte(b *testing.B) {
	b.SetBytes(int64(len(snippet)))
	for b.Loop() {
		if plainEndByByte(snippet, 0) != len(snippet) {
			b.Fatal("stopped")
		}
	}
}
