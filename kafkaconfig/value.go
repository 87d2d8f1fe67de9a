package kafkaconfig

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// javaTrim is Java's String.trim: it drops every char up to ' ' at both
// ends, not only Unicode white space.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// commaWithWhitespace is ConfigDef's list separator.
var commaWithWhitespace = regexp.MustCompile(`\s*,\s*`)

// JavaValue is raw parsed as ConfigDef parses a value of type t and printed
// back as ConfigDef.convertToString prints it: "TRUE" is "true", " 0.50" is
// "0.5", "a , b" is "a,b". ok is false when Apache would refuse the value.
func JavaValue(raw string, t Type) (string, bool) {
	s := javaTrim(raw)
	switch t {
	case TypeBoolean:
		switch {
		case strings.EqualFold(s, "true"):
			return "true", true
		case strings.EqualFold(s, "false"):
			return "false", true
		}
		return "", false
	case TypeInt, TypeShort, TypeLong:
		bits := map[Type]int{TypeInt: 32, TypeShort: 16, TypeLong: 64}[t]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return "", false
		}
		return strconv.FormatInt(n, 10), true
	case TypeDouble:
		f, ok := javaParseDouble(s)
		if !ok {
			return "", false
		}
		return javaDoubleString(f), true
	case TypeList:
		if s == "" {
			return "", true
		}
		return strings.Join(commaWithWhitespace.Split(s, -1), ","), true
	default: // STRING, CLASS (its name), PASSWORD
		return s, true
	}
}

// javaParseDouble accepts what Double.parseDouble accepts for the usual
// spellings: decimal and exponent forms, an optional d/D/f/F suffix, NaN
// and Infinity.
func javaParseDouble(s string) (float64, bool) {
	switch strings.TrimLeft(s, "+-") {
	case "NaN", "Infinity":
	case "", "nan", "inf", "infinity", "Inf":
		return 0, false // Go's spellings that Java refuses
	default:
		if last := s[len(s)-1]; strings.IndexByte("dDfF", last) >= 0 {
			s = s[:len(s)-1]
		}
	}
	if strings.ContainsAny(s, "_xXpP") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// javaDoubleString is Java's Double.toString: plain decimals with at least
// one fraction digit for magnitudes in [1e-3, 1e7), computerized scientific
// notation ("1.0E7", "1.0E-4") outside it.
func javaDoubleString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
