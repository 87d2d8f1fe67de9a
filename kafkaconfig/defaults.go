package kafkaconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// kraftdDefaults are the defaults Apache's KafkaConfig does not give: those
// of kraftd's own keys (kraftd.*), of the authorizer's keys (read by
// Apache's StandardAuthorizer, outside KafkaConfig), and of the two keys
// whose default kraftd changes.
var kraftdDefaults = map[string]string{
	// Apache writes its snapshots uncompressed. gzip, because the JDK
	// inflates it and Apache's snapshot reader (RecordsIterator) reads it
	// back whole; it reads a record with one read() call, which an LZ4
	// stream may answer short.
	"kraftd.metadata.snapshot.compression.type": "gzip",
	"kraftd.metrics.listener":                   "", // no metrics listener
	"kraftd.metrics.pprof.enable":               "false",
	// A follower's Fetch waits at most 25 ms at its leader, and a leader
	// silent for 350 ms is taken for failed (quorum/silence.go): a 200 ms
	// pause of its process, plus a fetch wait and a tick, stays well under.
	"kraftd.quorum.fetch.max.wait.ms":     "25",
	"kraftd.quorum.silence.timeout.ms":    "350",
	"kraftd.readiness.max.contact.age.ms": "1000",
	"kraftd.readiness.max.lag.records":    "10000",
	// Failed SASL logins a minute, from one address and as one principal.
	"kraftd.sasl.max.failed.authentications.per.address":   "30",
	"kraftd.sasl.max.failed.authentications.per.principal": "10",

	"allow.everyone.if.no.acl.found": "false",
	"super.users":                    "",

	// Apache's 500 counts a node-wide queue kraftd does not have; kraftd
	// counts per connection, so that one client's parked fetches cannot
	// lock every other client out.
	"queued.max.requests": "128",
	// Apache's -1 leaves what clients make the node hold unbounded. At
	// 64 MiB, as the Go collector lets the heap reach about twice what is
	// live and each connection adds its buffers and overdraft, 200 hostile
	// connections add about 200 MiB to the process
	// (TestHostileConnectionsShareOneMemoryBudget in cmd/kraftd measures it).
	"queued.max.request.bytes": "67108864",
}

// Default is the value kraftd takes for key when a file does not set it:
// kraftd's own default for the keys it defines or defaults differently,
// else Apache's, as the newest release line defines it (the lines agree on
// every key kraftd reads). ok is false for a key with no default: none
// known, or Apache's is null.
func Default(key string) (value string, ok bool) {
	if v, ok := kraftdDefaults[key]; ok {
		return v, true
	}
	k, ok := For(Lines[len(Lines)-1]).keys[key]
	if !ok || k.Default == nil {
		return "", false
	}
	return *k.Default, true
}

// DefaultInt is Default of an integer key. It panics when the key has no
// integer default: a reader asking for one is wrong, and every reader's
// tests parse a file that sets nothing.
func DefaultInt(key string) int64 {
	v, ok := Default(key)
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		panic(fmt.Sprintf("kafkaconfig: %s has no integer default (%q)", key, v))
	}
	return n
}

// DefaultBool is Default of a boolean key; it panics as DefaultInt does.
func DefaultBool(key string) bool {
	v, ok := Default(key)
	b, err := strconv.ParseBool(v)
	if !ok || err != nil {
		panic(fmt.Sprintf("kafkaconfig: %s has no boolean default (%q)", key, v))
	}
	return b
}

// KraftdKeys lists kraftd's own keys (kraftd.*), sorted.
func KraftdKeys() []string {
	var out []string
	for k := range kraftdDefaults {
		if strings.HasPrefix(k, "kraftd.") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
