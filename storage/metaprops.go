package storage

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kraftd/kraftd/storage/uuid"
)

// MetaPropertiesName is the file that marks a formatted log directory.
const MetaPropertiesName = "meta.properties"

// Keys of meta.properties (MetaProperties.java).
const (
	metaVersionKey     = "version"
	metaClusterIDKey   = "cluster.id"
	metaNodeIDKey      = "node.id"
	metaBrokerIDKey    = "broker.id"
	metaDirectoryIDKey = "directory.id"
)

// MetaProperties is a log directory's identity. Version 1 (what `format`
// writes) has node.id; version 0 (ZooKeeper era) had broker.id instead.
type MetaProperties struct {
	Version     int
	ClusterID   string    // "" when absent
	NodeID      int32     // node.id (v1) or broker.id (v0); -1 when absent
	DirectoryID uuid.UUID // uuid.Zero when absent
}

// Validate checks what Apache's MetaProperties.Builder.build checks, naming
// the offending key.
func (m MetaProperties) Validate() error {
	switch m.Version {
	case 0:
		return nil
	case 1:
		if m.ClusterID == "" {
			return fmt.Errorf("storage: meta.properties: %s was not found", metaClusterIDKey)
		}
		if m.NodeID < 0 {
			return fmt.Errorf("storage: meta.properties: %s was not found", metaNodeIDKey)
		}
		return nil
	default:
		return fmt.Errorf("storage: meta.properties: %s %d is not 0 or 1", metaVersionKey, m.Version)
	}
}

// EncodeMetaProperties renders m as Apache writes it with Properties.store:
// an empty "#" comment line, "#" plus the date in java.util.Date.toString
// form, then key=value lines. Properties is a hash table, so the lines come
// in its iteration order, not sorted: for the v1 keys that is node.id,
// directory.id, version, cluster.id (a Java 17 run confirmed it).
func EncodeMetaProperties(m MetaProperties, now time.Time) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	type kv struct{ k, v string }
	var props []kv
	props = append(props, kv{metaVersionKey, strconv.Itoa(m.Version)})
	if m.ClusterID != "" {
		props = append(props, kv{metaClusterIDKey, m.ClusterID})
	}
	if m.Version == 0 {
		if m.NodeID >= 0 {
			props = append(props, kv{metaBrokerIDKey, strconv.Itoa(int(m.NodeID))})
		}
	} else {
		props = append(props, kv{metaNodeIDKey, strconv.Itoa(int(m.NodeID))})
	}
	if m.DirectoryID != uuid.Zero {
		props = append(props, kv{metaDirectoryIDKey, m.DirectoryID.String()})
	}
	slices.SortStableFunc(props, func(a, b kv) int { return javaHashBin(a.k) - javaHashBin(b.k) })
	var b bytes.Buffer
	b.WriteString("#\n#" + now.Format("Mon Jan 02 15:04:05 MST 2006") + "\n")
	for _, p := range props {
		b.WriteString(escapeProperty(p.k, true) + "=" + escapeProperty(p.v, false) + "\n")
	}
	return b.Bytes(), nil
}

// javaHashBin is the bucket of key in a 16-bucket java ConcurrentHashMap,
// the table behind a small java.util.Properties; iteration goes by bucket,
// then by insertion order.
func javaHashBin(key string) int {
	var h int32
	for i := 0; i < len(key); i++ {
		h = 31*h + int32(key[i])
	}
	u := uint32(h)
	return int((u ^ u>>16) & 0x7fffffff & 15)
}

// escapeProperty escapes like Properties.saveConvert without \u escapes.
func escapeProperty(s string, isKey bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		r := s[i] // bytewise: non-ASCII UTF-8 passes through untouched
		switch r {
		case ' ':
			if i == 0 || isKey {
				b.WriteByte('\\')
			}
			b.WriteByte(r)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case '=', ':', '#', '!', '\\':
			b.WriteByte('\\')
			b.WriteByte(r)
		default:
			b.WriteByte(r)
		}
	}
	return b.String()
}

// ParseMetaProperties reads meta.properties in Java Properties syntax
// (comments, any key order, ':' or '=' or blanks as separator, escapes, line
// continuations) and builds MetaProperties as Apache does.
func ParseMetaProperties(data []byte) (MetaProperties, error) {
	props := ParseJavaProperties(string(data))
	m := MetaProperties{NodeID: -1}
	vs, ok := props[metaVersionKey]
	if !ok {
		vs = "0"
	}
	v, err := strconv.Atoi(vs)
	if err != nil || (v != 0 && v != 1) {
		return m, fmt.Errorf("storage: meta.properties: %s %q is not 0 or 1", metaVersionKey, vs)
	}
	m.Version = v
	idKey := metaNodeIDKey
	if v == 0 {
		idKey = metaBrokerIDKey
	}
	if s, ok := props[idKey]; ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return m, fmt.Errorf("storage: meta.properties: unable to read %s %q as a non-negative base-10 number", idKey, s)
		}
		m.NodeID = int32(n)
	}
	m.ClusterID = props[metaClusterIDKey]
	if s, ok := props[metaDirectoryIDKey]; ok {
		if m.DirectoryID, err = uuid.Parse(s); err != nil {
			return m, fmt.Errorf("storage: meta.properties: unable to read %s as a Uuid: %w", metaDirectoryIDKey, err)
		}
	}
	return m, m.Validate()
}

// ParseJavaProperties reads the text of a Java .properties file with the
// rules of java.util.Properties.load: `key=value`, `key: value` or `key value`,
// `#` and `!` comments, backslash continuations and escapes. Later keys win.
func ParseJavaProperties(s string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// An odd number of trailing backslashes joins the next line.
		for endsWithOddBackslashes(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		line = strings.TrimSuffix(line, `\`)
		keyEnd, valStart := len(line), len(line)
		for j := 0; j < len(line); j++ {
			c := line[j]
			if c == '\\' {
				j++
				continue
			}
			if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
				keyEnd = j
				k := j
				for k < len(line) && (line[k] == ' ' || line[k] == '\t' || line[k] == '\f') {
					k++
				}
				if k < len(line) && (line[k] == '=' || line[k] == ':') && (c == ' ' || c == '\t' || c == '\f' || k == j) {
					k++
				}
				for k < len(line) && (line[k] == ' ' || line[k] == '\t' || line[k] == '\f') {
					k++
				}
				valStart = k
				break
			}
		}
		out[unescapeProperty(line[:keyEnd])] = unescapeProperty(line[valStart:])
	}
	return out
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// ReadMetaProperties reads and validates the meta.properties at path.
func ReadMetaProperties(fsys FS, path string) (MetaProperties, error) {
	data, err := readFile(fsys, path)
	if err != nil {
		return MetaProperties{}, err
	}
	return ParseMetaProperties(data)
}

// WriteMetaProperties writes meta.properties durably (tmp, fsync, rename,
// fsync dir), dated now as Apache dates it.
func WriteMetaProperties(fsys FS, path string, m MetaProperties, now time.Time) error {
	data, err := EncodeMetaProperties(m, now)
	if err != nil {
		return err
	}
	return WriteFileAtomic(fsys, path, data)
}
