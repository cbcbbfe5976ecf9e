package attemptlog

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode"
)

// parseValue parses one JSON value the way ParseLine reads a line's values.
func parseValue(t *testing.T, text string) any {
	t.Helper()
	p := parser{buf: []byte(text)}
	v, err := p.document()
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return v
}

// The expected values are what CPython 3.11 prints for int(value).
func TestPyInt(t *testing.T) {
	ok := []struct {
		json string
		want string
	}{
		{`7`, "7"},
		{`-0`, "0"},
		{`123456789012345678901234567890`, "123456789012345678901234567890"},
		{`2.9`, "2"},
		{`-2.9`, "-2"},
		{`-0.0`, "0"},
		{`1e300`, "1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160"},
		{`1e19`, "10000000000000000000"},
		{`true`, "1"},
		{`false`, "0"},
		{`" 5 "`, "5"},
		{`"\u20005"`, "5"},
		{`"\u2028 5\u3000"`, "5"},
		{`"+5"`, "5"},
		{`"-5"`, "-5"},
		{`"1_000"`, "1000"},
		{`"007"`, "7"},
		{`"0_0"`, "0"},
		{`"\u0661\u0662"`, "12"},
		{`"\uff11\uff10"`, "10"},
		{`"\ud835\udfce\ud835\udfd9"`, "1"},
		{`"\u000b5\f"`, "5"},
		{`"\u00855"`, "5"},
		{`"-0"`, "0"},
		{`"99999999999999999999999"`, "99999999999999999999999"},
	}
	for _, tt := range ok {
		n, err := pyIntOf(parseValue(t, tt.json))
		if err != nil || n.String() != tt.want {
			t.Errorf("int(%s) = %s, %v; want %s", tt.json, n, err, tt.want)
		}
	}
	fails := []string{
		`null`, `[1]`, `{}`, `NaN`, `Infinity`, `-Infinity`,
		`""`, `" "`, `"\u001c5"`, `"-_5"`, `"1__0"`, `"_1"`, `"1_"`, `"5\u0000"`, `"- 5"`, `"5\u007f"`,
		`"1.5"`, `"1e3"`, `"0x10"`, `"five"`, `"\ud800"`, `"` + strings.Repeat("1", 4301) + `"`,
	}
	for _, text := range fails {
		if n, err := pyIntOf(parseValue(t, text)); err == nil {
			t.Errorf("int(%s) = %s; want an error", text, n)
		}
	}
}

// decimalValue relies on Nd coming in runs of ten that start at a zero.
func TestDecimalDigitRuns(t *testing.T) {
	for _, rg := range unicode.Nd.R16 {
		if rg.Stride != 1 || (int(rg.Hi)-int(rg.Lo)+1)%10 != 0 {
			t.Errorf("Nd range %+v is not whole runs of ten", rg)
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rg.Stride != 1 || (int(rg.Hi)-int(rg.Lo)+1)%10 != 0 {
			t.Errorf("Nd range %+v is not whole runs of ten", rg)
		}
	}
	if decimalValue('٩') != 9 || decimalValue('x') != -1 || decimalValue('½') != -1 {
		t.Error("decimalValue of ٩, x, ½ wrong")
	}
}

// The expected values are CPython's repr(float).
func TestFloatRepr(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{1.0, "1.0"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{1234567890123456.0, "1234567890123456.0"}, {9999999999999998.0, "9999999999999998.0"},
		{1e-5, "1e-05"}, {0.0001, "0.0001"}, {0.00012345, "0.00012345"},
		{math.Copysign(0, -1), "-0.0"}, {0, "0.0"}, {1.5e300, "1.5e+300"}, {5e-324, "5e-324"},
		{1.0 / 3, "0.3333333333333333"}, {123456789012345678.0, "1.2345678901234568e+17"},
		{1e22, "1e+22"}, {2.5e-7, "2.5e-07"}, {100, "100.0"}, {0.1, "0.1"}, {-1.5, "-1.5"},
		{math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}, {math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := floatRepr(tt.f, "Infinity", "NaN"); got != tt.want {
			t.Errorf("repr(%v) = %s, want %s", tt.f, got, tt.want)
		}
	}
	if got := floatRepr(math.Inf(-1), "inf", "nan"); got != "-inf" {
		t.Errorf("str(-inf) = %s", got)
	}
}

// The expected values are CPython's str() of what json.loads returns.
func TestPyStr(t *testing.T) {
	tests := []struct {
		json string
		want string
	}{
		{`"span_19"`, "span_19"},
		{`19`, "19"},
		{`-0`, "0"},
		{`1.5`, "1.5"},
		{`1E2`, "100.0"},
		{`1e16`, "1e+16"},
		{`-0.0`, "-0.0"},
		{`1e400`, "inf"},
		{`NaN`, "nan"},
		{`true`, "True"},
		{`null`, "None"},
		{`[]`, "[]"},
		{`{}`, "{}"},
		{`["a'b", "a\"b", "a'\"b", "\\", "\u007f\u0000\t\n\r\u001b", "\u00a0\u00ff\u0100\u200b\u2028\ufeff", "\ud83d\ude00\udb40\udc01", "é中", "\ud800"]`,
			`["a'b", 'a"b', 'a\'"b', '\\', '\x7f\x00\t\n\r\x1b', '\xa0ÿĀ\u200b\u2028\ufeff', '😀\U000e0001', 'é中', '\ud800']`},
		{`{"k": [1, 2.5, true, null, {}], "": [], "k": 3}`, `{'k': 3, '': []}`},
	}
	for _, tt := range tests {
		if got := pyStr(parseValue(t, tt.json)); got != tt.want {
			t.Errorf("str(%s) = %s, want %s", tt.json, got, tt.want)
		}
	}
}

// Python sets: 1, 1.0 and True are one element; so are all NaNs from json.loads (one object).
func TestHashKey(t *testing.T) {
	same := [][]string{
		{`1`, `1.0`, `true`, `1e0`, `"\u0031"`},
		{`0`, `-0`, `-0.0`, `false`},
		{`100000000000000000000`, `1e20`},
		{`1e400`, `Infinity`},
		{`NaN`, `NaN`},
		{`"ok"`, `"\u006fk"`},
	}
	for _, group := range same {
		first, _ := hashKey(parseValue(t, group[0]))
		for _, text := range group[1:] {
			if text == `"\u0031"` { // the string "1" is not the number 1
				if k, _ := hashKey(parseValue(t, text)); k == first {
					t.Errorf("hash key of %s equals that of %s", text, group[0])
				}
				continue
			}
			if k, _ := hashKey(parseValue(t, text)); k != first {
				t.Errorf("hash key of %s = %q, of %s = %q; want equal", text, k, group[0], first)
			}
		}
	}
	if k1, _ := hashKey(parseValue(t, `0.5`)); k1 == "i0" {
		t.Error("0.5 has the key of 0")
	}
	if k1, _ := hashKey(json.Number("NaN")); k1 == "fInf" {
		t.Error("NaN has the key of Infinity")
	}
	for _, text := range []string{`[]`, `{}`} {
		if _, err := hashKey(parseValue(t, text)); err == nil {
			t.Errorf("%s is hashable", text)
		}
	}
}

// The expected value is json.dumps(…, ensure_ascii=True) in CPython.
func TestJSONString(t *testing.T) {
	in := "\"\\\n\r\t\b\f\x00\x1f\x7f<>&/é\u2028\U0001F600"
	want := `"\"\\\n\r\t\b\f\u0000\u001f\u007f<>&/\u00e9\u2028\ud83d\ude00"`
	if got := string(appendJSONString(nil, in)); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	lone := parseValue(t, `"\ud800x\udfff"`).(string)
	if got := string(appendJSONString(nil, lone)); got != `"\ud800x\udfff"` {
		t.Errorf("lone surrogates: got %s", got)
	}
}

func TestPyJSONNested(t *testing.T) {
	v := parseValue(t, `{"a":[1,{"b":[]},{}],"c":2.50,"c":-0}`)
	want := "{\n    \"a\": [\n      1,\n      {\n        \"b\": []\n      },\n      {}\n    ],\n    \"c\": 0\n  }"
	if got := string(appendPyJSON(nil, v, 1)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
