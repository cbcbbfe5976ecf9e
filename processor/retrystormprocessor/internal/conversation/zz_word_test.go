package conversation

import (
	"strings"
	"testing"
)

func holdsToolWord2(s string) bool {
	for i := 2; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 'l':
			if s[i-1]|0x20 == 'o' && s[i-2]|0x20 == 'o' {
				return true
			}
		case 'n':
			if i >= 6 && s[i-1]|0x20 == 'o' && strings.EqualFold(s[i-6:i-1], "uncti") {
				return true
			}
		}
	}
	return false
}

var words = []string{
	`{"role":"assistant","content":"The weather in Paris is sunny and 22 degrees, a good day for a walk along the river. Would you like anything else? I can look up more information about museums or restaurants nearby."}`,
	`[{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}]`,
}

func BenchmarkZZWord(b *testing.B) {
	for _, w := range words {
		if holdsToolWord(w) != holdsToolWord2(w) {
			b.Fatal(w)
		}
	}
	b.Run("old", func(b *testing.B) {
		for b.Loop() {
			for _, w := range words {
				holdsToolWord(w)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			for _, w := range words {
				holdsToolWord2(w)
			}
		}
	})
}
