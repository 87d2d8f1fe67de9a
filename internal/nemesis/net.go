package nemesis

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Net is one test's packet filter over processes on loopback, each known
// by an id, the cgroup it runs in and the port it listens on.
type Net struct {
	t      testing.TB
	out    string // the OUTPUT chain: marks packets and connections
	in     string // the INPUT chain: drops cut packets
	mount  string // where the cgroup v2 hierarchy is mounted
	root   string // the cgroup mounted there ("/" unless in a container's view)
	cgroup string // this test's cgroup, relative to mount ("/kraftd-nemesis-…")

	tag   uint32 // the high 24 bits of its nodes' marks
	setup int    // how many of NewNet's four iptables commands succeeded

	mu    sync.Mutex
	nodes map[int32]netNode
	drops [][]string // the INPUT rules in place
}

type netNode struct {
	cgroup string // from the hierarchy's root, as iptables's cgroup match takes it
	dir    string // the directory
	port   int
	mark   uint32
}

// A node's mark, on its packets and on the connections it opens, is its
// Net's random 24-bit tag and then its id in the low byte. The INPUT chains
// of every Net see every packet, so the tag keeps one test's drops off
// another's processes, whose ids are the same.
const maxNodeID = 0xff

// NewNet makes the test's cgroup and chains and hooks the chains into
// OUTPUT and INPUT; the test's end removes them. Call it before starting
// any process it will cut, so that its cleanup runs after theirs.
func NewNet(t testing.TB) *Net {
	t.Helper()
	mount, root, err := cgroup2Mount()
	if err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	tag, mark := randomTag()
	n := &Net{t: t, tag: mark, out: "kn-" + tag + "-out", in: "kn-" + tag + "-in", mount: mount, root: root,
		cgroup: "/kraftd-nemesis-" + tag, nodes: map[int32]netNode{}}
	if err := os.Mkdir(filepath.Join(mount, n.cgroup), 0o755); err != nil {
		t.Fatalf("nemesis: a cgroup of the test's own: %v", err)
	}
	t.Cleanup(n.remove)
	for _, c := range [][]string{{"-N", n.out}, {"-N", n.in}, {"-I", "OUTPUT", "-j", n.out}, {"-I", "INPUT", "-j", n.in}} {
		if err := iptables(c...); err != nil {
			t.Fatalf("nemesis: %v", err)
		}
		n.setup++
	}
	return n
}

// Node registers process id listening on port and returns the cgroup
// directory it must start in (supervisor.Process.Cgroup or StartCmdIn).
func (n *Net) Node(id int32, port int) string {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	rel := fmt.Sprintf("%s/node-%d", n.cgroup, id)
	node := netNode{cgroup: filepath.Join(n.root, rel), dir: filepath.Join(n.mount, rel), port: port, mark: n.tag<<8 | uint32(id)}
	if _, dup := n.nodes[id]; dup || id < 0 || id > maxNodeID {
		n.t.Fatalf("nemesis: node id %d registered twice or out of range", id)
	}
	if err := os.Mkdir(node.dir, 0o755); err != nil {
		n.t.Fatalf("nemesis: %v", err)
	}
	mark := fmt.Sprintf("%#x", node.mark)
	for _, rule := range [][]string{
		{"-A", n.out, "-m", "cgroup", "--path", node.cgroup, "-j", "MARK", "--set-mark", mark},
		{"-A", n.out, "-m", "cgroup", "--path", node.cgroup, "-m", "conntrack", "--ctstate", "NEW", "-j", "CONNMARK", "--set-mark", mark},
	} {
		if err := iptables(rule...); err != nil {
			n.t.Fatalf("nemesis: %v", err)
		}
	}
	n.nodes[id] = node
	return node.dir
}

// Cut drops every packet from one node to another: on the connections to
// the receiver's listener and on those the receiver opened. Packets the
// other way still pass.
func (n *Net) Cut(from, to int32) {
	n.t.Helper()
	n.cut([][2]int32{{from, to}})
}

// Isolate cuts node id from every other node both ways, all at one moment:
// the rules go in as one batch, so a benchmark that times the fault from
// the call does not count the partition's making rule by rule.
func (n *Net) Isolate(id int32) {
	n.t.Helper()
	var pairs [][2]int32
	for _, other := range n.others(id) {
		pairs = append(pairs, [2]int32{id, other}, [2]int32{other, id})
	}
	n.cut(pairs)
}

// cut drops the packets of each pair's sender to its receiver, every rule
// in one iptables-restore transaction.
func (n *Net) cut(pairs [][2]int32) {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	var rules [][]string
	for _, p := range pairs {
		f, ok1 := n.nodes[p[0]]
		r, ok2 := n.nodes[p[1]]
		if !ok1 || !ok2 {
			n.t.Fatalf("nemesis: cut %d -> %d: unknown node", p[0], p[1])
		}
		sender := fmt.Sprintf("%#x", f.mark)
		rules = append(rules,
			[]string{n.in, "-m", "mark", "--mark", sender, "-p", "tcp", "--dport", fmt.Sprint(r.port), "-j", "DROP"},
			[]string{n.in, "-m", "mark", "--mark", sender, "-m", "connmark", "--mark", fmt.Sprintf("%#x", r.mark), "-j", "DROP"})
	}
	if err := iptablesBatch("-A", rules); err != nil {
		n.t.Fatalf("nemesis: %v", err)
	}
	n.drops = append(n.drops, rules...)
}

func (n *Net) others(id int32) []int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int32
	for o := range n.nodes {
		if o != id {
			out = append(out, o)
		}
	}
	return out
}

// Heal removes every cut.
func (n *Net) Heal() {
	n.t.Helper()
	if err := n.heal(); err != nil {
		n.t.Fatalf("nemesis: %v", err)
	}
}

func (n *Net) heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.drops) == 0 {
		return nil
	}
	err := iptablesBatch("-D", n.drops)
	n.drops = nil
	return err
}

// remove undoes NewNet and every Node and Cut, reporting what it could not.
func (n *Net) remove() {
	errs := []error{n.heal()}
	// The undoing of NewNet's commands, last first: unhook, then empty and
	// delete the chain.
	undo := [][][]string{{{"-F", n.out}, {"-X", n.out}}, {{"-F", n.in}, {"-X", n.in}},
		{{"-D", "OUTPUT", "-j", n.out}}, {{"-D", "INPUT", "-j", n.in}}}
	for i := n.setup - 1; i >= 0; i-- {
		for _, c := range undo[i] {
			errs = append(errs, iptables(c...))
		}
	}
	for _, node := range n.nodes {
		errs = append(errs, os.Remove(node.dir))
	}
	errs = append(errs, os.Remove(filepath.Join(n.mount, n.cgroup)))
	for _, err := range errs {
		if err != nil {
			n.t.Errorf("nemesis: cleaning up: %v", err)
		}
	}
}

// iptables runs iptables, waiting for the lock other tests may hold.
func iptables(args ...string) error {
	out, err := exec.Command(sbin("iptables"), append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// iptablesBatch applies op (-A or -D) to every rule of the filter table in
// one iptables-restore transaction, which the kernel takes at once.
func iptablesBatch(op string, rules [][]string) error {
	var b strings.Builder
	b.WriteString("*filter\n")
	for _, r := range rules {
		b.WriteString(op + " " + strings.Join(r, " ") + "\n")
	}
	b.WriteString("COMMIT\n")
	cmd := exec.Command(sbin("iptables-restore"), "-w", "--noflush")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore %s of %d rules: %v: %s", op, len(rules), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup
// on a unified host, /sys/fs/cgroup/unified on a hybrid one.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options... - fstype source options
		fields := strings.Fields(s.Text())
		for i, field := range fields {
			if field == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], fields[3], nil
			}
		}
	}
	return "", "", fmt.Errorf("no cgroup v2 hierarchy is mounted (/proc/self/mountinfo): the packet filter tells processes apart by their cgroup")
}

// randomTag names a Net's chains and cgroup, and gives the 24-bit tag of
// its marks (never 0: an unmarked packet has mark 0).
func randomTag() (string, uint32) {
	b := make([]byte, 4)
	for b[1]|b[2]|b[3] == 0 {
		_, _ = rand.Read(b)
	}
	return hex.EncodeToString(b), uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
