package controller

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/metadata"
)

// transcript runs one scenario file against a real Core on a txLog. Time
// is explicit: at=<duration> on any command sets the clock (from the Unix
// epoch), and every input is given that time.
type transcript struct {
	t     *testing.T
	ctl   *Controller
	core  *Core
	log   *txLog
	now   time.Time
	out   strings.Builder
	ops   int                      // operations given, ever: their names #1, #2, ...
	names map[metadata.Uuid]string // topic ids seen, printed as <name>
	// epochs are the broker epochs registrations were answered with, and
	// hmacs the delegation tokens created, for the commands that follow.
	epochs map[int32]int64
	hmacs  map[string][]byte
}

func (tr *transcript) printf(format string, args ...any) {
	fmt.Fprintf(&tr.out, format+"\n", args...)
}

func (tr *transcript) run(c txCmd) string {
	tr.out.Reset()
	if at, ok := c.kv["at"]; ok {
		tr.now = time.Unix(0, 0).Add(tr.duration(c, at))
	}
	if c.name != "init" && tr.core == nil {
		tr.t.Fatalf("%s: init first", c.pos)
	}
	if f, ok := txLogCommands[c.name]; ok {
		f(tr, c)
	} else if f, ok := txOperations[c.name]; ok {
		tr.operation(c, f)
	} else {
		tr.t.Fatalf("%s: unknown command %q", c.pos, c.name)
	}
	return tr.out.String()
}

// txLogCommands are the inputs other than operations: the controller's
// setup, its leadership, the log's notifications, time and inspection.
var txLogCommands = map[string]func(tr *transcript, c txCmd){
	"init": (*transcript).init,
	"lead": func(tr *transcript, c txCmd) { tr.lead(int32(tr.int(c, "epoch", 1))) },
	"resign": func(tr *transcript, c txCmd) {
		tr.log.leader = false
		tr.log.fail(c.has("keep"))
		tr.log.tell()
	},
	"take": func(tr *transcript, c txCmd) { tr.log.take(tr.int(c, "n", -1)) },
	// commit [end=<offset>|n=<writes>]: the taken writes below end, the
	// first n of them, or all.
	"commit": func(tr *transcript, c txCmd) {
		end := int64(tr.int(c, "end", -1))
		if n := tr.int(c, "n", 0); n > 0 && n <= len(tr.log.taken) {
			end = tr.log.taken[n-1].end()
		}
		tr.log.commit(end)
	},
	"fail":   func(tr *transcript, c txCmd) { tr.log.fail(c.has("keep")) },
	"settle": (*transcript).settle,
	// quorum [kraft.version=<v>] [refuse=<code>]: the quorum's
	// kraft.version, and the error it refuses upgrades with (none: it
	// takes them).
	"quorum": func(tr *transcript, c txCmd) {
		tr.log.kraft = int16(tr.int(c, "kraft.version", int(tr.log.kraft)))
		tr.log.refusal = nil
		if code := tr.int(c, "refuse", 0); code != 0 {
			tr.log.refusal = &Error{Code: int16(code), Message: "the quorum refuses"}
		}
		tr.log.tell()
	},
	"tick": func(tr *transcript, c txCmd) { tr.core.Tick(tr.now) },
	// registration-to-send: the ControllerRegistration this controller
	// would send the leader now (Core.RegistrationToSend), or none.
	"registration-to-send": func(tr *transcript, c txCmd) {
		req := tr.core.RegistrationToSend()
		if req == nil {
			tr.printf("none")
			return
		}
		tr.printf("send ControllerRegistration controllerId=%d incarnation=%x listeners=%d features=%d", req.ControllerID, req.IncarnationID[:2], len(req.Listeners), len(req.Features))
	},
	// foreign-write topic=<name>: another writer (not the core) puts a
	// TopicRecord in the log; it commits with the next commit.
	"foreign-write": func(tr *transcript, c txCmd) {
		name := c.arg("topic", "foreign")
		w := &txWrite{name: "foreign", recs: []metadata.Record{&metadata.TopicRecord{Name: name, TopicId: metadata.Uuid{0: 9, 15: byte(len(name))}}}}
		tr.log.append(w)
		tr.printf("foreign write at %s:%s", offsets(w), tr.records(w.recs))
	},
	"brokers": (*transcript).brokers,
	"show":    (*transcript).show,
}

// init makes the controller: node=<id> mv=<metadata.version> seed=<n>,
// session=<broker session timeout>, unclean (unclean.leader.election),
// rebalance=<interval> (auto leader rebalance), feature.<name>=<level>
// to override a bootstrap level (0 leaves the feature out).
func (tr *transcript) init(c txCmd) {
	mv := int16(tr.int(c, "mv", int(LatestMetadataVersion)))
	levels := DefaultFeatureLevels(mv)
	for _, k := range c.keys {
		if name, ok := strings.CutPrefix(k, "feature."); ok {
			levels[name] = int16(tr.int(c, k, 0))
		}
	}
	bootstrap := []metadata.Record{&metadata.FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: mv}}
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		if levels[name] > 0 {
			bootstrap = append(bootstrap, &metadata.FeatureLevelRecord{Name: name, FeatureLevel: levels[name]})
		}
	}
	node := int32(tr.int(c, "node", 1))
	seed := uint64(tr.int(c, "seed", 1))
	tr.ctl, tr.now = New(node, bootstrap), time.Unix(0, 0)
	tr.log = &txLog{tr: tr, kraft: int16(tr.int(c, "kraft.version", 0))}
	tr.names, tr.epochs, tr.hmacs = map[metadata.Uuid]string{}, map[int32]int64{}, map[string][]byte{}
	s := Settings{NodeID: node, ClusterID: testCluster, SessionTimeout: tr.duration(c, c.arg("session", "9s")),
		UncleanLeaderElection: c.has("unclean"), KRaftVersion: tr.log.kraft,
		Rand: rand.New(rand.NewPCG(seed, 7)), TopicIDs: rand.NewChaCha8([32]byte{byte(seed)}),
		Incarnation: [16]byte{0: 0xc0, 1: byte(node)},
		Listeners:   []Listener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(19000 + node)}},
		Tokens:      TokenSettings{Secret: "transcript-secret", MaxLifetime: 10 * time.Hour, Expiry: time.Hour, CheckEvery: time.Minute},
		Report: func(work string, n int, err error) {
			tr.printf("timed %s: %d%s", work, n, strings.TrimRight(" "+errText(err), " "))
		}}
	if r := c.arg("rebalance", ""); r != "" {
		s.AutoLeaderRebalance, s.LeaderImbalanceCheck = true, tr.duration(c, r)
	}
	tr.core = NewCore(tr.ctl, tr.log, s)
}

// lead makes this node the leader of epoch: the quorum appends its
// LeaderChange control record, and, on a log that never held a
// metadata.version, the node its activation records (node/ready.go).
// They commit with the next commit.
func (tr *transcript) lead(epoch int32) {
	tr.log.leader, tr.log.epoch = true, epoch
	w := &txWrite{name: fmt.Sprintf("leader-change-%d", epoch), epoch: epoch, recs: []metadata.Record{nil}}
	w.recs = append(w.recs, tr.ctl.ActivationRecords()...)
	tr.log.append(w)
	tr.printf("leader of epoch %d; the node writes at %s:%s", epoch, offsets(w), tr.records(w.recs))
	tr.log.tell()
}

// settle takes and commits until the log holds nothing uncommitted.
func (tr *transcript) settle(c txCmd) {
	for i := 0; len(tr.log.queued)+len(tr.log.taken) > 0; i++ {
		if i == 100 {
			tr.t.Fatalf("%s: the log does not settle", c.pos)
		}
		tr.log.take(-1)
		tr.log.commit(-1)
	}
}

// brokers registers and unfences brokers 1..n (racks=a,b,... gives
// each its rack), settling the log after each step, and prints only
// their epochs: the steps are registration.txt's.
func (tr *transcript) brokers(c txCmd) {
	racks := strings.Split(c.arg("racks", ""), ",")
	for i := range tr.int(c, "n", 1) {
		id := strconv.Itoa(i + 1)
		line := "register-broker id=" + id
		if i < len(racks) && racks[i] != "" {
			line += " rack=" + racks[i]
		}
		tr.operation(parseCmd(line, c.pos), txOperations["register-broker"])
		tr.settle(c)
		tr.operation(parseCmd("heartbeat id="+id, c.pos), txOperations["heartbeat"])
		tr.settle(c)
	}
	tr.out.Reset()
	for i := range tr.int(c, "n", 1) {
		tr.printf("broker %d epoch=%d", i+1, tr.epochs[int32(i+1)])
	}
}

// show prints parts of the committed image as the records that rebuild
// it: show brokers|controllers|topics|partitions|configs|features|
// acls|quotas|scram|tokens|producer-ids, with topic=<name> to pick one
// topic's partitions and p=<id> one partition; show partition <topic>-<p>
// is one partition.
func (tr *transcript) show(c txCmd) {
	want := map[string]bool{}
	for _, w := range c.words {
		want[w] = true
	}
	if want["partition"] { // show partition <topic>-<p>
		topic, p := tr.partition(c, c.words[1])
		c.kv["topic"], c.kv["p"], want["partitions"] = topic, strconv.Itoa(int(p)), true
	}
	tr.ctl.mu.RLock()
	recs, err := tr.ctl.image.Records()
	tr.ctl.mu.RUnlock()
	if err != nil {
		tr.printf("%v", err)
		return
	}
	for _, r := range recs {
		if t, ok := r.(*metadata.TopicRecord); ok {
			tr.names[t.TopicId] = t.Name
		}
		if !want[showKind(r)] {
			continue
		}
		if p, ok := r.(*metadata.PartitionRecord); ok {
			if tr.names[p.TopicId] != c.arg("topic", tr.names[p.TopicId]) || strconv.Itoa(int(p.PartitionId)) != c.arg("p", strconv.Itoa(int(p.PartitionId))) {
				continue
			}
		}
		tr.printf("%s", tr.brief(r))
	}
}

// showKinds names the records show prints, by type.
var showKinds = map[string]string{"RegisterBroker": "brokers", "RegisterController": "controllers", "Topic": "topics",
	"Partition": "partitions", "Config": "configs", "FeatureLevel": "features", "AccessControlEntry": "acls",
	"ClientQuota": "quotas", "UserScramCredential": "scram", "DelegationToken": "tokens", "ProducerIds": "producer-ids"}

func showKind(r metadata.Record) string {
	return showKinds[strings.TrimSuffix(reflect.TypeOf(r).Elem().Name(), "Record")]
}

func (tr *transcript) int(c txCmd, key string, def int) int {
	if v, ok := c.kv[key]; ok {
		return tr.num(c, v)
	}
	return def
}

func (tr *transcript) num(c txCmd, v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		tr.t.Fatalf("%s: %q: %v", c.pos, v, err)
	}
	return n
}

func (tr *transcript) duration(c txCmd, v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil {
		tr.t.Fatalf("%s: %v", c.pos, err)
	}
	return d
}

// ints parses a comma-separated list of ids ("" is an empty list).
func (tr *transcript) ints(c txCmd, v string) []int32 {
	out := []int32{}
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' }) {
		out = append(out, int32(tr.num(c, f)))
	}
	return out
}
