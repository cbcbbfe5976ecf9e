package attemptlog

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// attemptLogInput writes per-attempt JSONL with the awkward corners of the format: values of
// every JSON type where the script expects strings or integers, escapes, repeated keys,
// Python whitespace, all three line ends. With crashes set, a few lines the script would
// crash on are mixed in.
type attemptLogInput struct {
	r       *rand.Rand
	b       strings.Builder
	crashes bool
}

func (g *attemptLogInput) pick(options ...string) string { return options[g.r.IntN(len(options))] }
func (g *attemptLogInput) chance(p float64) bool         { return g.r.Float64() < p }

// textPieces are fragments of JSON string bodies: raw and escaped characters, surrogate
// pairs, lone surrogates, quotes, HTML characters, control characters.
var textPieces = []string{
	"a", "run", "_", "7f3", " ", "<", ">", "&", "/", `\/`, `\"`, `\\`, "'", `\n`, `\t`, `\r`,
	`\b`, `\f`, `\u0000`, `\u001f`, "\x7f", "é", `\u00e9`, "中", "😀", `\ud83d\ude00`, `\ud800`,
	`\udfff`, "\u2028", "\u0085", "\u00a0", "\u200b", "\ufeff", `\u0041`, "ÿ", "Ā", `\U`,
}

func (g *attemptLogInput) text(maxPieces int) string {
	var b strings.Builder
	b.WriteByte('"')
	for range 1 + g.r.IntN(maxPieces) {
		piece := g.pick(textPieces...)
		if piece == `\U` { // not an escape JSON knows: keep the text, drop the backslash
			piece = "U"
		}
		b.WriteString(piece)
	}
	b.WriteByte('"')
	return b.String()
}

func (g *attemptLogInput) integer(lo, hi int) string {
	return strconv.Itoa(lo + g.r.IntN(hi-lo+1))
}

// scalar is a hashable JSON value: what status and args_hash may be without a crash.
func (g *attemptLogInput) scalar() string {
	return g.pick(`1`, `1.0`, `true`, `false`, `0`, `-0.0`, `2.5`, `NaN`, `Infinity`, `1e400`,
		`100000000000000000000`, `1e20`, g.text(4), `"1"`, `null`)
}

// nested is any JSON value, containers included, for run_id, tool_name and idem_hash.
func (g *attemptLogInput) nested(depth int) string {
	if depth > 2 || g.chance(0.5) {
		return g.pick(g.scalar(), g.text(6), `12`, `-3`, `1e-05`, `0.0001`, `1.2345678901234568e+17`, `[]`, `{}`)
	}
	if g.chance(0.5) {
		items := make([]string, 1+g.r.IntN(3))
		for i := range items {
			items[i] = g.nested(depth + 1)
		}
		return "[" + strings.Join(items, g.pick(",", ", ", " ,\t")) + "]"
	}
	keys := []string{`"a"`, `"b"`, `"<&>"`, `"é"`, `""`, `"a"`}
	items := make([]string, 1+g.r.IntN(3))
	for i := range items {
		items[i] = g.pick(keys...) + g.pick(":", ": ", " : ") + g.nested(depth+1)
	}
	return "{" + strings.Join(items, ",") + "}"
}

func (g *attemptLogInput) spanID(n int) string {
	switch g.r.IntN(14) {
	case 0:
		return strconv.Itoa(n) // the same group as the string "n"
	case 1:
		return g.pick(`1.5`, `1e16`, `1e-05`, `-0.0`, `NaN`, `1E2`, `true`, `false`)
	case 2:
		return g.pick(`[1, "a'b", true, null]`, `{"k": [2.5, {}], "k": "\u00e9"}`, `["\"", "'"]`, `[]`, `{"a\n": "\u0007"}`)
	case 3:
		return g.text(5)
	default:
		return `"` + "span_" + strconv.Itoa(n) + `"`
	}
}

// attempt is a value int() accepts: an integer in one of Python's spellings.
func (g *attemptLogInput) attempt(k int) string {
	s := strconv.Itoa(k)
	switch g.r.IntN(12) {
	case 0:
		return `"` + g.pick(" ", "\\t", "\\u3000", "") + s + g.pick(" ", "\\u2028", "") + `"`
	case 1:
		return `"+` + s + `"`
	case 2:
		return s + "." + g.integer(0, 9) // int() truncates
	case 3:
		if k < 10 {
			return `"` + string(rune(0x660+k)) + `"` // ARABIC-INDIC DIGIT
		}
		return `"` + s[:1] + "_" + s[1:] + `"`
	case 4:
		return g.pick(`true`, `false`, `-1`, `100000000000000000000`, `"-0"`, `1e19`)
	default:
		return s
	}
}

func (g *attemptLogInput) timestamp(base int64) string {
	v := strconv.FormatInt(base, 10)
	switch g.r.IntN(10) {
	case 0:
		return `"` + g.pick(" ", "") + v + `"`
	case 1:
		return v + ".75"
	case 2:
		return g.pick(`1e300`, `-5`, `true`, `123456789012345678901234567890`, `"1_000"`)
	default:
		return v
	}
}

// attemptLine writes one tool_attempt; some miss a required value or repeat a key.
func (g *attemptLogInput) attemptLine(runID, span string, k int, t0 int64) string {
	fields := [][2]string{
		{"event", `"tool_attempt"`},
		{"run_id", runID},
		{"span_id", span},
		{"attempt", g.attempt(k)},
		{"tool_name", g.pick(`"charge_card"`, `"search"`, `"<b>&amp;</b>"`, g.nested(0))},
		{"args_hash", g.pick(`"a91c9e0c"`, `"a91c9e0c"`, `"ffee"`, g.scalar())},
		{"status", g.pick(`"ok"`, `"error"`, `"timeout"`, `"ok"`, g.scalar())},
		{"t_start", g.timestamp(t0)},
		{"t_end", g.timestamp(t0 + int64(g.r.IntN(5000)))},
		{"token_in", g.pick(`812`, `null`, `-1.5e-7`)},
		{"side_effect", g.pick(`"unknown"`, `"external"`, `"none"`)},
	}
	if g.chance(0.5) {
		fields = append(fields, [2]string{"idem_hash", g.pick(`"e2b1aa44"`, `null`, g.nested(0))})
	}
	if g.chance(0.08) { // incomplete: a required value missing, null or empty
		i := 1 + g.r.IntN(8)
		switch g.r.IntN(3) {
		case 0:
			fields = append(fields[:i], fields[i+1:]...)
		case 1:
			fields[i][1] = `null`
		default:
			fields[i][1] = `""`
		}
	}
	if g.chance(0.1) { // a repeated key: the later value wins
		i := g.r.IntN(len(fields))
		fields = append([][2]string{{fields[i][0], g.pick(`null`, `"error"`, `[1]`, `""`)}}, fields...)
	}
	g.r.Shuffle(len(fields), func(i, j int) {
		if g.chance(0.3) {
			fields[i], fields[j] = fields[j], fields[i]
		}
	})
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = `"` + f[0] + `"` + g.pick(":", ": ", " :\t") + f[1]
	}
	return "{" + strings.Join(parts, g.pick(",", ", ")) + "}"
}

// otherLine is a line that is not a tool attempt: another event, blank, not JSON.
func (g *attemptLogInput) otherLine() string {
	return g.pick(
		`{"event":"llm_call","run_id":"run_1","tokens":12}`,
		`{"event":"tool_attempt ","span_id":"x"}`,
		`{"event":null}`, `{}`, `{"span_id":"s","attempt":1}`,
		"", "   ", "\t", "\u3000", "\x0c", "\x1c",
		`{oops`, `{'a': 1}`, `[1,]`, `{"a":1}}`, `{"a":01}`, `{"a":"\x"}`, "\ufeff{}", `{"a":-NaN}`,
		"{\"a\":\"\x01\"}", `nul`, `{"a" 1}`,
	)
}

// crashLine is a line the script would crash on, or an attempt that makes it crash when the
// value lands where the script converts it.
func (g *attemptLogInput) crashLine(span string) string {
	bad := func(key, value string) string {
		return fmt.Sprintf(`{"event":"tool_attempt","run_id":"r","span_id":%s,"attempt":%d,"tool_name":"t","args_hash":"h","status":"ok","t_start":1,"t_end":2,%q:%s}`,
			span, 1+g.r.IntN(4), key, value)
	}
	switch g.r.IntN(8) {
	case 0:
		return g.pick(`[1, 2]`, `5`, `"tool_attempt"`, `null`, `true`)
	case 1:
		return bad("attempt", g.pick(`"two"`, `[1]`, `NaN`, `Infinity`, `"1.5"`, `{}`))
	case 2:
		return bad("status", g.pick(`["ok"]`, `{"s":1}`))
	case 3:
		return bad("args_hash", g.pick(`[]`, `{}`))
	case 4:
		return bad(g.pick("t_start", "t_end"), g.pick(`"soon"`, `[1]`, `NaN`, `-Infinity`, `"1.0"`, `{}`))
	case 5:
		return "{\"event\":\"tool_attempt\",\"bytes\":\"\xff\xfe\"}"
	case 6:
		return `{"n":` + strings.Repeat("7", 4301) + `}`
	default:
		return bad("t_end", `"later"`)
	}
}

// file returns one input: runs of spans with several attempts each, ties, more than 20
// storms in some files.
func (g *attemptLogInput) file() []byte {
	g.b.Reset()
	spans := 1 + g.r.IntN(8)
	if g.chance(0.4) {
		spans = 28 + g.r.IntN(20)
	}
	crashes := 0
	if g.crashes && g.chance(0.35) {
		crashes = 1 + g.r.IntN(2)
	}
	var lines []string
	t0 := int64(1757385600000)
	for s := range spans {
		runID := g.pick(`"run_7f3"`, `"run_a1"`, `7`, g.nested(1))
		span := g.spanID(s)
		for k := range 1 + g.r.IntN(5) {
			if g.chance(0.1) {
				k = g.r.IntN(3) // repeated or out-of-order attempt numbers
			}
			lines = append(lines, g.attemptLine(runID, span, k+1, t0))
			t0 += int64(g.r.IntN(3000))
		}
		for g.chance(0.2) {
			lines = append(lines, g.otherLine())
		}
	}
	g.r.Shuffle(len(lines), func(i, j int) {
		if g.chance(0.15) {
			lines[i], lines[j] = lines[j], lines[i]
		}
	})
	for range crashes {
		at := g.r.IntN(len(lines) + 1)
		line := g.crashLine(g.spanID(g.r.IntN(spans)))
		lines = append(lines[:at], append([]string{line}, lines[at:]...)...)
	}
	for i, line := range lines {
		if g.chance(0.1) {
			line = g.pick(" ", "\t", "\u3000", "\u0085") + line + g.pick(" ", "\u2028", "\x1f", "\x0b")
		}
		g.b.WriteString(line)
		if i < len(lines)-1 || g.chance(0.7) {
			g.b.WriteString(g.pick("\n", "\n", "\n", "\r\n", "\r"))
		}
	}
	return []byte(g.b.String())
}
