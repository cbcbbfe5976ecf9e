package attemptlog

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// pyInt is a Python int: small when it fits in an int64, big otherwise.
type pyInt struct {
	big   *big.Int
	small int64
}

func (n pyInt) toBig() *big.Int {
	if n.big != nil {
		return n.big
	}
	return big.NewInt(n.small)
}

func (n pyInt) cmp(m pyInt) int {
	if n.big == nil && m.big == nil {
		switch {
		case n.small < m.small:
			return -1
		case n.small > m.small:
			return 1
		}
		return 0
	}
	return n.toBig().Cmp(m.toBig())
}

func (n pyInt) sub(m pyInt) *big.Int {
	return new(big.Int).Sub(n.toBig(), m.toBig())
}

func (n pyInt) String() string {
	if n.big != nil {
		return n.big.String()
	}
	return strconv.FormatInt(n.small, 10)
}

func bigToPyInt(b *big.Int) pyInt {
	if b.IsInt64() {
		return pyInt{small: b.Int64()}
	}
	return pyInt{big: b}
}

var errUnhashable = errors.New("unhashable type")

// isFloatLiteral reports whether json.loads makes a float of the literal.
func isFloatLiteral(n json.Number) bool {
	return strings.ContainsAny(string(n), ".eEIN")
}

// pyFloat is float(literal) for a literal json.loads reads as a float.
func pyFloat(n json.Number) float64 {
	f, _ := strconv.ParseFloat(string(n), 64) // out of range gives ±Inf, as Python does
	return f
}

// pyIntLiteral is the Python int of an integer literal.
func pyIntLiteral(n json.Number) pyInt {
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return pyInt{small: v}
	}
	b, _ := new(big.Int).SetString(string(n), 10)
	return bigToPyInt(b)
}

// pyIntOf is Python's int(v) for a value json.loads returns; the error says what Python
// raises.
func pyIntOf(v any) (pyInt, error) {
	switch v := v.(type) {
	case json.Number:
		if !isFloatLiteral(v) {
			return pyIntLiteral(v), nil
		}
		return pyIntOfFloat(pyFloat(v))
	case bool:
		if v {
			return pyInt{small: 1}, nil
		}
		return pyInt{}, nil
	case string:
		return pyIntOfString(v)
	default:
		return pyInt{}, errors.New("TypeError: int() argument must be a string or a number, not '" + pyTypeName(v) + "'")
	}
}

func pyIntOfFloat(f float64) (pyInt, error) {
	switch {
	case math.IsNaN(f):
		return pyInt{}, errors.New("ValueError: cannot convert float NaN to integer")
	case math.IsInf(f, 0):
		return pyInt{}, errors.New("OverflowError: cannot convert float infinity to integer")
	case math.Abs(f) < 1<<63:
		return pyInt{small: int64(f)}, nil // truncates toward zero, as int() does
	}
	b, _ := big.NewFloat(f).Int(nil)
	return pyInt{big: b}, nil
}

// pyIntOfString is int(s) for a str: Unicode whitespace around it, Unicode decimal digits,
// an optional sign, single underscores between digits, at most maxIntDigits digits.
func pyIntOfString(s string) (pyInt, error) {
	invalid := func() error { return errors.New("ValueError: invalid literal for int() with base 10: " + pyRepr(s)) }
	// Python first maps non-ASCII whitespace to ' ' and decimal digits to ASCII ones.
	ascii := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, size := decodeWTF8(s[i:])
		i += size
		switch {
		case r < 127:
			ascii = append(ascii, byte(r))
		case pyIsSpace(r):
			ascii = append(ascii, ' ')
		default:
			d := decimalValue(r)
			if d < 0 {
				return pyInt{}, invalid()
			}
			ascii = append(ascii, byte('0'+d))
		}
	}
	t := strings.Trim(string(ascii), " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	digits := make([]byte, 0, len(t)+1)
	if neg {
		digits = append(digits, '-')
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case isDigit(c):
			digits = append(digits, c)
		case c == '_' && i > 0 && isDigit(t[i-1]) && i+1 < len(t) && isDigit(t[i+1]):
		default:
			return pyInt{}, invalid()
		}
	}
	n := len(digits)
	if neg {
		n--
	}
	if n == 0 {
		return pyInt{}, invalid()
	}
	if n > maxIntDigits {
		return pyInt{}, errors.New("ValueError: exceeds the limit (4300 digits) for integer string conversion")
	}
	return pyIntLiteral(json.Number(digits)), nil
}

// decimalValue is the value of a Unicode decimal digit (category Nd), or -1. Nd comes in
// runs of ten from a zero, so the value is the offset within the run.
func decimalValue(r rune) int {
	if r < 0x80 {
		if r >= '0' && r <= '9' {
			return int(r - '0')
		}
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// pyStr is Python's str(v).
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v).
func pyRepr(v any) string {
	var b strings.Builder
	appendRepr(&b, v)
	return b.String()
}

func appendRepr(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		appendStrRepr(b, v)
	case json.Number:
		if !isFloatLiteral(v) {
			b.WriteString(pyIntLiteral(v).String())
			return
		}
		b.WriteString(floatRepr(pyFloat(v), "inf", "nan"))
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case nil:
		b.WriteString("None")
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			appendRepr(b, item)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			appendStrRepr(b, k)
			b.WriteString(": ")
			appendRepr(b, v.vals[i])
		}
		b.WriteByte('}')
	}
}

const lowerHex = "0123456789abcdef"

// appendStrRepr is repr() of a str: single quotes unless the text has a single quote and no
// double quote, backslash escapes for the quote, the backslash and unprintable characters.
func appendStrRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := decodeWTF8(s[i:])
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			writeHexEscape(b, 'x', r, 2)
		case r < 0x7f:
			b.WriteByte(byte(r))
		case unicode.IsPrint(r): // false for surrogates (category Cs), as in Python
			b.WriteRune(r)
		case r <= 0xff:
			writeHexEscape(b, 'x', r, 2)
		case r <= 0xffff:
			writeHexEscape(b, 'u', r, 4)
		default:
			writeHexEscape(b, 'U', r, 8)
		}
	}
	b.WriteByte(quote)
}

func writeHexEscape(b *strings.Builder, kind byte, r rune, width int) {
	b.WriteByte('\\')
	b.WriteByte(kind)
	for shift := 4 * (width - 1); shift >= 0; shift -= 4 {
		b.WriteByte(lowerHex[(r>>shift)&0xf])
	}
}

// floatRepr is Python's repr(float): the shortest digits that round-trip, positional when
// the decimal exponent is in (-4, 16], else d.ddde±XX. inf and nan name the non-finite
// values (json.dump writes Infinity and NaN).
func floatRepr(f float64, inf, nan string) string {
	switch {
	case math.IsNaN(f):
		return nan
	case math.IsInf(f, 1):
		return inf
	case math.IsInf(f, -1):
		return "-" + inf
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	decpt := x + 1 // the value is 0.digits × 10^decpt
	var out string
	switch {
	case decpt > -4 && decpt <= 16:
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
	default:
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		esign := "+"
		if x < 0 {
			esign, x = "-", -x
		}
		es := strconv.Itoa(x)
		if len(es) < 2 {
			es = "0" + es
		}
		out += "e" + esign + es
	}
	return sign + out
}

// hashKey is the identity of a hashable value in a Python set: values that compare equal
// (1, 1.0 and True; 0, -0.0 and False) share a key. Every NaN json.loads returns is one
// shared float object, so NaNs are one element too. Lists and objects are unhashable.
func hashKey(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return "s" + v, nil
	case nil:
		return "n", nil
	case bool:
		if v {
			return "i1", nil
		}
		return "i0", nil
	case json.Number:
		if !isFloatLiteral(v) {
			return "i" + pyIntLiteral(v).String(), nil
		}
		f := pyFloat(v)
		switch {
		case math.IsNaN(f):
			return "fnan", nil
		case math.IsInf(f, 0):
			return "f" + strconv.FormatFloat(f, 'g', -1, 64), nil
		case f == math.Trunc(f):
			n, _ := pyIntOfFloat(f)
			return "i" + n.String(), nil
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64), nil
	default:
		return "", errUnhashable
	}
}
