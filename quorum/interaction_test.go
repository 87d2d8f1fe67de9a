package quorum_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/node/nodetest"
	"github.com/kraftd/kraftd/quorum"
)

// TestInteraction runs every transcript in testdata/. Each node is the
// production runtime (node.Node over a MemFS directory, through
// node/nodetest); this file only routes messages between them and prints
// what happened.
func TestInteraction(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			env := &interactionEnv{nodes: map[int32]*envNode{}, cut: map[[2]int32]bool{},
				conns: connState{open: map[int32][]quorum.Message{}, refusing: map[int32]bool{}, refuseNext: map[[2]int32]int{}}}
			runDataDriven(t, f, env.handle)
		})
	}
}

// clusterID is every transcript node's cluster.id; `send` uses it unless
// told otherwise.
const clusterID = "test-cluster"

type envNode struct {
	*nodetest.Node
	role  quorum.Role
	epoch int32
	fatal bool // its loop stopped on a fatal error (printed once)
}

type interactionEnv struct {
	nodes   map[int32]*envNode
	voters  map[int32][]quorum.Endpoint
	oldVote map[int32]bool // peers that only speak Vote v1
	queue   []quorum.Message
	cut     map[[2]int32]bool // directed links that drop messages
	// holds keep back the next message on a link whose description starts
	// with a given word, until release: a late answer, delivered after the
	// ones that overtook it.
	holds []holdRule
	held  []quorum.Message
	conns connState // requests open on connections, hosts refusing them
	// bootstrap routes requests to bootstrap servers (interaction_bootstrap_test.go).
	bootstrap bootstrapRoutes
	out       strings.Builder
}

type holdRule struct {
	from, to int32
	kind     string
}

func (e *interactionEnv) printf(format string, args ...any) { fmt.Fprintf(&e.out, format, args...) }

func (e *interactionEnv) ids() []int32 {
	var ids []int32
	for id := range e.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func parseIDs(s string) []int32 {
	var out []int32
	for _, f := range strings.FieldsFunc(strings.Trim(s, "()"), func(r rune) bool { return r == ',' || r == ' ' }) {
		v, _ := strconv.Atoi(f)
		out = append(out, int32(v))
	}
	return out
}

// node is the node named by the command's first argument.
func (e *interactionEnv) node(c testCmd) *envNode { return e.nodes[parseIDs(c.args[0])[0]] }

func (e *interactionEnv) handle(t *testing.T, c testCmd) string {
	e.out.Reset()
	handlers := map[string]func(*testing.T, testCmd){
		"add-nodes": e.addNodes,
		"tick":      e.tick,
		"campaign":  e.campaign,
		"stabilize": func(t *testing.T, _ testCmd) { e.stabilize(t) },
		"run":       e.run,
		"isolate":   e.isolate,
		"heal":      func(*testing.T, testCmd) { clear(e.cut) },
		// cut drops every message on one direction of a link.
		// Example: cut 1->2
		"cut": func(_ *testing.T, c testCmd) {
			from, to, _ := strings.Cut(c.args[0], "->")
			e.cut[[2]int32{parseIDs(from)[0], parseIDs(to)[0]}] = true
		},
		"hold":    e.hold,
		"release": e.release,
		"propose": e.propose,
		"resign": func(_ *testing.T, c testCmd) {
			e.node(c).Runtime().Resign()
			e.process()
		},
		// A crash keeps what the MemFS keeps of the disk after a power
		// loss; messages the node sent before stay on the wire but are
		// dropped at delivery, as the node is down.
		"crash":     e.crashNode,
		"drop-conn": e.dropConn,
		"restart":   e.restart,
		"snapshot":  e.snapshot,
		"status":    func(*testing.T, testCmd) { e.printStatus() },
		"log": func(_ *testing.T, c testCmd) {
			for _, id := range parseIDs(strings.Join(c.args, ",")) {
				e.printLog(id)
			}
		},
		"send": e.send,
		// slow-append makes the node's next append (and its fsync) take
		// that long on its clock. Example: slow-append 2 250
		"slow-append": func(_ *testing.T, c testCmd) {
			ms, _ := strconv.ParseInt(c.args[1], 10, 64)
			e.node(c).SlowNextAppend(ms)
		},
		// sync runs the named leader's deferred fsync held by hold-syncs.
		"sync": func(_ *testing.T, c testCmd) {
			e.node(c).ReleaseSync()
			e.process()
		},
		"describe": e.describe,
		// Voter changes (interaction_reconfig_test.go).
		"add-voter":     e.addVoter,
		"remove-voter":  e.removeVoter,
		"update-voter":  e.updateVoter,
		"upgrade-kraft": e.upgradeKRaft,
		"voters":        e.printVoters,
		"reformat":      e.reformat,
	}
	h, ok := handlers[c.name]
	if !ok {
		t.Fatalf("%s: unknown command %q", c.pos, c.name)
	}
	h(t, c)
	return e.out.String()
}

// addNodes starts a new cluster of formatted nodes: a static quorum, or
// with `dynamic` one formatted with --initial-controllers naming the
// voters (observers are formatted with the same list, or with `bootstrap`
// --no-initial-controllers, knowing the voters as bootstrap servers only).
// auto-join names the nodes started with controller.quorum.auto.join.enable.
// silence=MS sets every node's kraftd.quorum.silence.timeout.ms (and a
// 50 ms kraftd.quorum.fetch.max.wait.ms), hold-syncs keeps leaders'
// deferred fsyncs until sync.
// Example: add-nodes 3 observers=1 old-vote=(3) [dynamic] [bootstrap] [auto-join=(101)] [silence=300] [hold-syncs]
func (e *interactionEnv) addNodes(t *testing.T, c testCmd) {
	n, _ := strconv.Atoi(c.args[0])
	obs, _ := strconv.Atoi(c.arg("observers", "0"))
	clear(e.nodes)
	e.voters = map[int32][]quorum.Endpoint{}
	e.oldVote = map[int32]bool{}
	for _, id := range parseIDs(c.arg("old-vote", "")) {
		e.oldVote[id] = true
	}
	for i := 1; i <= n; i++ {
		e.voters[int32(i)] = []quorum.Endpoint{endpointOf(int32(i))}
	}
	var ids []int32
	for i := 1; i <= n; i++ {
		ids = append(ids, int32(i))
	}
	for i := 1; i <= obs; i++ {
		ids = append(ids, int32(100+i))
	}
	for _, id := range ids {
		cfg := nodetest.Config{
			ID: id, Voters: e.voters, ClusterID: clusterID,
			// A metadata.version in the bootstrap snapshot lets `snapshot`
			// write a real metadata snapshot; the log stays as proposed.
			Features: []metadata.Record{&metadata.FeatureLevelRecord{Name: controller.MetadataVersionFeature, FeatureLevel: controller.LatestMetadataVersion}},
			// The same election jitter at every start.
			Rand: func() *rand.Rand { return rand.New(rand.NewPCG(uint64(id), 7)) },
			PeerVersion: func(peer int32, key int16) (int16, bool) {
				if key == 52 && e.oldVote[peer] {
					return 1, true
				}
				return 0, false
			},
		}
		if c.has("dynamic") {
			cfg.InitialVoters = e.voters
			cfg.Endpoints = []quorum.Endpoint{endpointOf(id)}
		}
		if c.has("bootstrap") && e.voters[id] == nil {
			// Formatted --no-initial-controllers, the voters given as
			// controller.quorum.bootstrap.servers (host:port, no name).
			cfg.InitialVoters = nil
			for i := 1; i <= n; i++ {
				ep := endpointOf(int32(i))
				cfg.BootstrapServers = append(cfg.BootstrapServers, quorum.Endpoint{Host: ep.Host, Port: ep.Port})
			}
		}
		autoJoin := slices.Contains(parseIDs(c.arg("auto-join", "")), id)
		silence, _ := strconv.ParseInt(c.arg("silence", "0"), 10, 64)
		cfg.Tune = func(nc *node.Config) {
			nc.AutoJoin = autoJoin
			if silence > 0 {
				nc.SilenceTimeoutMs, nc.FetchMaxWaitMs = silence, 50
			}
		}
		cfg.HoldSyncs = c.has("hold-syncs")
		h, err := nodetest.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.nodes[id] = e.track(h)
	}
	e.printStatus()
}

func (e *interactionEnv) track(h *nodetest.Node) *envNode {
	st := h.Status()
	return &envNode{Node: h, role: st.Role, epoch: st.Epoch}
}

// tick advances the clock of every node (or of those named) and runs
// their loops once; messages wait for stabilize.
// Example: tick 500 [node=1]
func (e *interactionEnv) tick(_ *testing.T, c testCmd) {
	ms, _ := strconv.ParseInt(c.args[0], 10, 64)
	only := parseIDs(c.arg("node", ""))
	for _, id := range e.ids() {
		if n := e.nodes[id]; n.Up() && (len(only) == 0 || slices.Contains(only, id)) {
			n.Advance(ms)
		}
	}
	e.process()
}

// campaign lets the named nodes' election (or fetch) timers expire.
// Example: campaign 1
func (e *interactionEnv) campaign(_ *testing.T, c testCmd) {
	for _, id := range parseIDs(c.args[0]) {
		e.nodes[id].Advance(4000)
	}
	e.process()
}

// run advances every node's clock in 50 ms steps, stabilizing after each,
// and prints only role changes, errors, truncations and snapshot installs.
// Example: run 3000
func (e *interactionEnv) run(t *testing.T, c testCmd) {
	ms, _ := strconv.ParseInt(c.args[0], 10, 64)
	for elapsed := int64(0); elapsed < ms; elapsed += 50 {
		for _, id := range e.ids() {
			if n := e.nodes[id]; n.Up() {
				n.Advance(50)
			}
		}
		e.stabilize(t)
	}
	var keep []string
	for _, l := range strings.Split(e.out.String(), "\n") {
		if strings.Contains(l, " became ") || strings.Contains(l, "error") || strings.Contains(l, "truncated") || strings.Contains(l, "installed") || strings.Contains(l, " answers ") || strings.Contains(l, "AddRaftVoter") || strings.Contains(l, "RemoveRaftVoter") {
			keep = append(keep, l)
		}
	}
	e.out.Reset()
	e.out.WriteString(strings.Join(keep, "\n"))
}

// isolate cuts every link to and from the named nodes.
// Example: isolate 1
func (e *interactionEnv) isolate(_ *testing.T, c testCmd) {
	for _, id := range parseIDs(c.args[0]) {
		for _, other := range e.ids() {
			e.cut[[2]int32{id, other}] = true
			e.cut[[2]int32{other, id}] = true
		}
	}
}

// hold keeps back the next message of a kind on a link until release.
// Example: hold 3->1 FetchResponse
func (e *interactionEnv) hold(_ *testing.T, c testCmd) {
	from, to, _ := strings.Cut(c.args[0], "->")
	e.holds = append(e.holds, holdRule{from: parseIDs(from)[0], to: parseIDs(to)[0], kind: c.args[1]})
}

// release delivers every held message, oldest first, then stabilizes.
func (e *interactionEnv) release(t *testing.T, _ testCmd) {
	e.queue = append(e.held, e.queue...)
	e.held, e.holds = nil, nil
	e.stabilize(t)
}

// propose hands values to a node as one proposal of metadata records
// (cluster-level broker configs named by the value) and prints where the
// leader put them, or why it refused them.
// Example: propose 1 a b c
func (e *interactionEnv) propose(_ *testing.T, c testCmd) {
	n := e.node(c)
	var recs []metadata.Record
	for _, v := range c.args[1:] {
		recs = append(recs, &metadata.ConfigRecord{ResourceType: 4, Name: v, Value: &v})
	}
	base, answered := int64(-1), false
	p := &node.Proposal{
		Records: recs,
		Stamp:   func(first int64) { base = first },
		Done: func(_ int64, err error) {
			if err != nil && !answered {
				e.printf("error: %v\n", err)
			}
			answered = true
		},
	}
	n.Runtime().Propose(p)
	switch {
	case answered: // refused at once, printed by Done
	case base < 0:
		e.printf("held until the epoch commits\n")
	default:
		e.printf("base=%d epoch=%d\n", base, n.Status().Epoch)
	}
	answered = true // later answers (the commit) are not printed
	e.process()
}

// restart starts a crashed (or running) node again on its disk.
func (e *interactionEnv) restart(t *testing.T, c testCmd) {
	n := e.node(c)
	delete(e.conns.refusing, n.ID())
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	e.nodes[n.ID()] = e.track(n.Node)
	e.printStatus()
}

// snapshot compacts a node's log up to its high watermark: it writes a
// snapshot at the last whole committed batch and deletes the log before it.
// Example: snapshot 1
func (e *interactionEnv) snapshot(_ *testing.T, c testCmd) {
	n := e.node(c)
	id, err := n.Runtime().SnapshotNow()
	if err != nil {
		e.printf("error: %v\n", err)
	}
	e.printf("snapshot %d@%d start=%d\n", id.EndOffset, id.Epoch, n.Disk().Log.StartOffset())
}

// process runs the loop of every node that is up, in id order, queues what
// each sent and prints what changed; it reports whether anything did.
func (e *interactionEnv) process() bool {
	moved := false
	for _, id := range e.ids() {
		if e.processNode(e.nodes[id], false) {
			moved = true
		}
	}
	return moved
}

// processNode runs one node's loop. Quorum-state writes are printed only
// when persists is set (a hand-stepped request shows what it made durable).
func (e *interactionEnv) processNode(n *envNode, persists bool) bool {
	if !n.Up() {
		return false
	}
	if err := n.Process(); err != nil && !n.fatal {
		n.fatal = true
		e.printf("n%d error: %v\n", n.ID(), err)
	}
	moved := false
	for _, ev := range n.Events() {
		switch ev.Kind {
		case nodetest.Truncated, nodetest.SnapshotInstalled:
			e.printf("n%d %s\n", n.ID(), ev)
		case nodetest.HardStateWritten:
			if persists {
				hs := ev.HardState
				e.printf("n%d persists epoch=%d voted=%d leader=%d\n", n.ID(), hs.LeaderEpoch, hs.VotedID, hs.LeaderID)
			}
		}
		moved = true
	}
	if st := n.Status(); st.Role != n.role || st.Epoch != n.epoch {
		e.printf("n%d became %s epoch=%d leader=%d\n", n.ID(), st.Role, st.Epoch, st.LeaderID)
		n.role, n.epoch = st.Role, st.Epoch
		moved = true
	}
	msgs := n.Messages()
	for i, m := range msgs {
		e.conns.answered(n.ID(), m)
		msgs[i] = e.bootstrap.outbound(m)
	}
	e.queue = append(e.queue, msgs...)
	return moved || len(msgs) > 0
}

// stabilize delivers messages and runs loops until nothing moves.
func (e *interactionEnv) stabilize(t *testing.T) {
	for round := 0; ; round++ {
		if round > 1000 {
			t.Fatal("stabilize did not converge")
		}
		moved := e.process()
		if len(e.queue) == 0 {
			if !moved {
				return
			}
			continue
		}
		msgs := e.queue
		e.queue = nil
		for _, m := range msgs {
			to, from := e.nodes[e.bootstrap.host(m.To, m.From)], e.nodes[e.bootstrap.host(m.From, m.To)]
			if to != nil && from != nil && from.Up() && !e.cut[[2]int32{m.From, m.To}] && e.refused(m) {
				e.printf("%s (refused)\n", describeMessage(m))
				continue
			}
			// A failure is the sender's own peer client speaking: it
			// crosses no link and needs no live peer.
			local := m.Err != nil && to != nil && to.Up()
			if !local && (to == nil || !to.Up() || e.cut[[2]int32{m.From, m.To}] || from == nil || !from.Up()) {
				e.printf("%s (dropped)\n", describeMessage(m))
				continue
			}
			if e.holdMessage(m) {
				e.printf("%s (held)\n", describeMessage(m))
				continue
			}
			e.printf("%s\n", describeMessage(m))
			e.conns.delivered(m)
			to.Deliver(e.bootstrap.inbound(m))
		}
	}
}

// holdMessage takes m out of the traffic if a hold rule wants it; each rule
// holds one message.
func (e *interactionEnv) holdMessage(m quorum.Message) bool {
	desc := describeMessage(m)
	for i, h := range e.holds {
		if h.from == m.From && h.to == m.To && strings.HasPrefix(desc, fmt.Sprintf("%d->%d %s ", m.From, m.To, h.kind)) {
			e.holds = slices.Delete(e.holds, i, i+1)
			e.held = append(e.held, m)
			return true
		}
	}
	return false
}

func (e *interactionEnv) printStatus() {
	for _, id := range e.ids() {
		n := e.nodes[id]
		if !n.Up() {
			e.printf("n%d down\n", id)
			continue
		}
		s := n.Status()
		e.printf("n%d %s epoch=%d leader=%d voted=%d hw=%d end=%d@%d\n", id, s.Role, s.Epoch, s.LeaderID, s.VotedID, s.HighWatermark, s.EndOffset, s.LastEpoch)
	}
}

func (e *interactionEnv) printLog(id int32) {
	n := e.nodes[id]
	if !n.Up() {
		e.printf("n%d down\n", id)
		return
	}
	var parts []string
	if snap, ok := n.LatestSnapshot(); ok {
		parts = append(parts, fmt.Sprintf("snap(%d@%d)", snap.EndOffset, snap.Epoch))
	}
	batches, err := n.Batches()
	for _, b := range batches {
		parts = append(parts, describeBatch(b))
	}
	if err != nil {
		parts = append(parts, "<"+err.Error()+">")
	}
	e.printf("n%d: %s\n", id, strings.Join(parts, " "))
}
