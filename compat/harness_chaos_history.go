package compat

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/storage/uuid"
)

// WriteHistory records the writes a chaos run sends to the quorum and what
// each was answered, then checks them: against a model of topic names with
// porcupine, and against what every controller's log holds at the end.
//
// A CreateTopics answered 0 or TOPIC_ALREADY_EXISTS says what the name's
// state was; one answered NOT_CONTROLLER, REQUEST_TIMED_OUT,
// UNKNOWN_SERVER_ERROR or never (a broken connection) may or may not have
// taken effect; one refused for any other reason (say, no unfenced broker
// to place it on) took none. Broker registrations always use a new broker
// id, so only their acknowledgement matters: its epoch must be in every log.
type WriteHistory struct {
	start time.Time

	mu         sync.Mutex
	ops        []porcupine.Operation
	acks       []WriteAck
	created    map[string]string // acknowledged creates: name -> topic id
	registered map[int32]int64   // acknowledged registrations: broker id -> epoch
	unknown    int               // writes whose outcome is not known
	refused    int
}

// WriteAck is one write acknowledged by the controller at Addr.
type WriteAck struct {
	At   time.Time
	Addr string
}

// Outcomes of a create, as the model reads them.
type createOutcome int

const (
	createdOK createOutcome = iota
	createdExists
	createRefused
	createUnknown
)

// topicOp is one operation on a name: a create, or the end-of-run read of
// one controller's log (exists is then what it held).
type topicOp struct {
	name   string
	read   bool
	exists bool
	node   int32
}

// NewWriteHistory starts an empty history.
func NewWriteHistory() *WriteHistory {
	return &WriteHistory{start: time.Now(), created: map[string]string{}, registered: map[int32]int64{}}
}

func (h *WriteHistory) now() int64 { return int64(time.Since(h.start)) }

// CallCreate records that a create of name is being sent; AnswerCreate
// records its answer.
func (h *WriteHistory) CallCreate(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{Input: topicOp{name: name}, Call: h.now(), Output: createUnknown, Return: math.MaxInt64})
	return len(h.ops) - 1
}

// AnswerCreate records the answer to op from addr: err is a transport
// failure (no answer), otherwise code and id are the topic's.
func (h *WriteHistory) AnswerCreate(op int, addr string, code int16, id [16]byte, err error) {
	at := time.Now()
	out := createRefused
	switch {
	case err != nil, code == kerr.NotController.Code, code == kerr.RequestTimedOut.Code, code == kerr.UnknownServerError.Code:
		out = createUnknown
	case code == 0:
		out = createdOK
	case code == kerr.TopicAlreadyExists.Code:
		out = createdExists
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch out {
	case createUnknown:
		h.unknown++
		return // returns never: it may take effect at any later time
	case createdOK:
		h.created[h.ops[op].Input.(topicOp).name] = uuid.UUID(id).String()
		h.acks = append(h.acks, WriteAck{At: at, Addr: addr})
	case createRefused:
		h.refused++
	}
	h.ops[op].Output, h.ops[op].Return = out, int64(at.Sub(h.start))
}

// Registered records an acknowledged broker registration.
func (h *WriteHistory) Registered(addr string, broker int32, epoch int64) {
	at := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.registered[broker] = epoch
	h.acks = append(h.acks, WriteAck{At: at, Addr: addr})
}

// RegistrationUnknown counts a registration whose outcome is not known.
func (h *WriteHistory) RegistrationUnknown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unknown++
}

// FirstAckAfter is the first write acknowledged after since by a controller
// other than the one at notAddr, if any.
func (h *WriteHistory) FirstAckAfter(since time.Time, notAddr string) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.acks {
		if a.At.After(since) && a.Addr != notAddr {
			return a.At, true
		}
	}
	return time.Time{}, false
}

// Summary counts the writes.
func (h *WriteHistory) Summary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return fmt.Sprintf("%d creates sent: %d topics created, %d broker registrations acknowledged, %d outcomes unknown, %d refused",
		len(h.ops), len(h.created), len(h.registered), h.unknown, h.refused)
}

// Acknowledged is how many writes were acknowledged.
func (h *WriteHistory) Acknowledged() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.created) + len(h.registered)
}

// NodeLog is what one controller's log holds once the run is over.
type NodeLog struct {
	Node    int32
	Topics  map[string]string // name -> topic id, as Apache prints it
	Brokers map[int32][]int64 // broker id -> every registered epoch
}

// Check compares the history with the logs. Lost lists each acknowledged
// write missing from a log; the creates, together with a read of each log
// at the end, must also be linearizable, or Check says why not.
func (h *WriteHistory) Check(logs []NodeLog) (lost []error, nonLinearizable error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range logs {
		for name, id := range h.created {
			if got, ok := l.Topics[name]; !ok || got != id {
				lost = append(lost, fmt.Errorf("node %d: acknowledged topic %s (id %s) is missing (log has id %q, present %v)", l.Node, name, id, got, ok))
			}
		}
		for broker, epoch := range h.registered {
			if !slices.Contains(l.Brokers[broker], epoch) {
				lost = append(lost, fmt.Errorf("node %d: acknowledged registration of broker %d at epoch %d is missing (log has %v)", l.Node, broker, epoch, l.Brokers[broker]))
			}
		}
	}
	return lost, h.checkLinearizable(logs)
}

// checkLinearizable adds one read per name and log, after every write, and
// runs porcupine over the whole history.
func (h *WriteHistory) checkLinearizable(logs []NodeLog) error {
	ops := slices.Clone(h.ops)
	names := map[string]bool{}
	for _, op := range ops {
		names[op.Input.(topicOp).name] = true
	}
	at := h.now()
	for _, l := range logs {
		for name := range l.Topics {
			names[name] = true
		}
	}
	for _, l := range logs {
		for name := range names {
			_, exists := l.Topics[name]
			ops = append(ops, porcupine.Operation{Input: topicOp{name: name, read: true, exists: exists, node: l.Node}, Call: at, Output: createdOK, Return: at + 1})
			at += 2
		}
	}
	switch porcupine.CheckOperationsTimeout(createModel, ops, time.Minute) {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return fmt.Errorf("the writes and the logs are not linearizable:\n%s", describeOps(ops))
	}
	return fmt.Errorf("the linearizability check of %d operations timed out", len(ops))
}

// createModel is a set of topic names, checked name by name.
var createModel = (&porcupine.NondeterministicModel{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		byName := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range ops {
			name := op.Input.(topicOp).name
			if byName[name] == nil {
				order = append(order, name)
			}
			byName[name] = append(byName[name], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, name := range order {
			out = append(out, byName[name])
		}
		return out
	},
	Init: func() []any { return []any{false} },
	Step: func(state, input, output any) []any {
		exists, in, out := state.(bool), input.(topicOp), output.(createOutcome)
		switch {
		case in.read && in.exists == exists:
			return []any{exists}
		case in.read:
			return nil
		case out == createUnknown:
			return []any{exists, true}
		case out == createRefused:
			return []any{exists}
		case out == createdOK && !exists, out == createdExists && exists:
			return []any{true}
		}
		return nil
	},
}).ToModel()

// describeOps lists the operations of a failed check, by name.
func describeOps(ops []porcupine.Operation) string {
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b porcupine.Operation) int {
		return strings.Compare(a.Input.(topicOp).name, b.Input.(topicOp).name)
	})
	outcomes := []string{"created", "exists", "refused", "unknown"}
	var b strings.Builder
	for _, op := range sorted {
		in := op.Input.(topicOp)
		ret := "never"
		if op.Return != math.MaxInt64 {
			ret = time.Duration(op.Return).String()
		}
		if in.read {
			fmt.Fprintf(&b, "  %s: node %d's log at the end: exists %v\n", in.name, in.node, in.exists)
			continue
		}
		fmt.Fprintf(&b, "  %s: create [%v, %s] -> %s\n", in.name, time.Duration(op.Call), ret, outcomes[op.Output.(createOutcome)])
	}
	return b.String()
}
