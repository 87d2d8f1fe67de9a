package imageenv

import (
	"sort"
	"strings"
)

// Excluded are the KAFKA_* variables the apache/kafka image reads itself
// (JVM, log4j and image options) and never turns into properties.
var Excluded = map[string]bool{
	"KAFKA_VERSION":              true,
	"KAFKA_HEAP_OPTS":            true,
	"KAFKA_LOG4J_OPTS":           true,
	"KAFKA_OPTS":                 true,
	"KAFKA_JMX_OPTS":             true,
	"KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS":          true,
	"KAFKA_LOG4J_ROOT_LOGLEVEL":  true,
	"KAFKA_LOG4J_LOGGERS":        true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true,
	"KAFKA_JMX_HOSTNAME":         true,
}

// Key is the property an environment variable names, and false when the
// variable names none. The rule is Apache's: every "KAFKA_" in the name is
// removed (not only the prefix: Apache replaces them all), the rest is
// lowercased, then "_" becomes ".", and after that "..." becomes "-" and
// ".." becomes "_". So ___ is a dash, __ an underscore, _ a dot, and four
// underscores are "-.".
func Key(name string) (string, bool) {
	if !strings.HasPrefix(name, "KAFKA_") || Excluded[name] {
		return "", false
	}
	k := strings.ToLower(strings.ReplaceAll(name, "KAFKA_", ""))
	k = strings.ReplaceAll(k, "_", ".")
	k = strings.ReplaceAll(k, "...", "-")
	k = strings.ReplaceAll(k, "..", "_")
	if strings.TrimSpace(k) == "" {
		return "", false
	}
	return k, true
}

// Lines are the "key=value" lines the KAFKA_* variables of environ (as
// os.Environ gives it) make, sorted so that the written file is the same
// from run to run. A value is written as it is, as Apache writes it, so
// Java properties escapes in it keep their meaning.
func Lines(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if key, ok := Key(name); ok {
			out = append(out, key+"="+value)
		}
	}
	sort.Strings(out)
	return out
}

// Merge is the final server.properties: the mounted file (nil when there
// is none) with the environment's lines after it, so that a variable
// overrides the file's key, as in Apache's image. When both are empty the
// result is fallback, the image's own default configuration.
func Merge(mounted []byte, environ []string, fallback []byte) []byte {
	var b strings.Builder
	b.Write(mounted)
	if lines := Lines(environ); len(lines) > 0 {
		b.WriteString("\n# From KAFKA_* environment variables (they override the lines above)\n")
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n")
	}
	if strings.TrimSpace(b.String()) == "" {
		return fallback
	}
	return []byte(b.String())
}
