package kafkaconfig

import (
	"embed"
	"encoding/json"
	"fmt"
	"sync"
)

//go:embed defs/*.json
var defsFS embed.FS

// Type is a config type as DescribeConfigs sends it (ConfigType, v3+).
type Type int8

const (
	TypeUnknown Type = iota
	TypeBoolean
	TypeString
	TypeInt
	TypeShort
	TypeLong
	TypeDouble
	TypeList
	TypeClass
	TypePassword
)

var typeByName = map[string]Type{
	"BOOLEAN": TypeBoolean, "STRING": TypeString, "INT": TypeInt, "SHORT": TypeShort, "LONG": TypeLong,
	"DOUBLE": TypeDouble, "LIST": TypeList, "CLASS": TypeClass, "PASSWORD": TypePassword,
}

// Key is one key of a release's KafkaConfig (or of its broker quota keys).
type Key struct {
	Name string
	Type Type
	// Default is the default in Java's string form; nil when the key has
	// none or it is null.
	Default *string
	// Internal keys are accepted but described only when a file sets them.
	Internal bool
}

// Defs is one release line's configuration facts.
type Defs struct {
	Line  int // major*10+minor: 39 for 3.9, 44 for 4.4
	keys  map[string]Key
	quota map[string]Key // dynamic-only per-broker quota keys
	// dynamic: keys a node updates at run time (readOnly=false).
	// perBroker: dynamic keys that are never cluster-wide.
	// securityDynamic: SSL keys that are dynamic only with a listener prefix.
	dynamic, perBroker, securityDynamic map[string]bool
}

// Lines are the release lines with definitions, oldest first.
var Lines = []int{39, 40, 41, 42, 43, 44}

var (
	loadOnce sync.Once
	loaded   map[int]*Defs
	loadErr  error
)

// For returns the definitions of line, or of the nearest line with
// definitions: the oldest for an older line, the newest for a newer one.
func For(line int) *Defs {
	loadOnce.Do(func() { loaded, loadErr = loadAll() })
	if loadErr != nil {
		panic(loadErr) // the embedded files are checked by the package's tests
	}
	line = max(Lines[0], min(line, Lines[len(Lines)-1]))
	return loaded[line]
}

type defsFile struct {
	Keys []struct {
		Name     string  `json:"name"`
		Type     string  `json:"type"`
		Default  *string `json:"default"`
		Internal bool    `json:"internal"`
	} `json:"keys"`
	QuotaKeys []struct {
		Name    string  `json:"name"`
		Type    string  `json:"type"`
		Default *string `json:"default"`
	} `json:"quotaKeys"`
	Dynamic         []string `json:"dynamic"`
	PerBroker       []string `json:"perBroker"`
	SecurityDynamic []string `json:"securityDynamic"`
}

func loadAll() (map[int]*Defs, error) {
	all := map[int]*Defs{}
	for _, line := range Lines {
		name := fmt.Sprintf("defs/%d.%d.json", line/10, line%10)
		b, err := defsFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var f defsFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		d := &Defs{Line: line, keys: map[string]Key{}, quota: map[string]Key{},
			dynamic: set(f.Dynamic), perBroker: set(f.PerBroker), securityDynamic: set(f.SecurityDynamic)}
		for _, k := range f.Keys {
			t, ok := typeByName[k.Type]
			if !ok {
				return nil, fmt.Errorf("%s: key %s has unknown type %q", name, k.Name, k.Type)
			}
			d.keys[k.Name] = Key{Name: k.Name, Type: t, Default: k.Default, Internal: k.Internal}
		}
		for _, k := range f.QuotaKeys {
			t, ok := typeByName[k.Type]
			if !ok {
				return nil, fmt.Errorf("%s: quota key %s has unknown type %q", name, k.Name, k.Type)
			}
			d.quota[k.Name] = Key{Name: k.Name, Type: t, Default: k.Default}
		}
		all[line] = d
	}
	return all, nil
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
