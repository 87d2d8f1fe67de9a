package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The admin's operations on topics form a history that must be
// linearizable against a set of topic names: a create succeeds only on an
// absent name and fails with TOPIC_ALREADY_EXISTS only on a present one; a
// delete succeeds only on a present name and fails with
// UNKNOWN_TOPIC_OR_PARTITION only on an absent one. An operation answered
// NOT_CONTROLLER or UNKNOWN_SERVER_ERROR (its node stopped on a disk fault),
// or never answered (its node crashed), may or may not have taken effect;
// one refused for any other reason took none.

type topicOp struct {
	create bool
	name   string
}

type outcome int

const (
	outcomeOK outcome = iota
	outcomeExists
	outcomeUnknownTopic
	outcomeRefused
	outcomeUnknown // it may or may not have happened
)

type history struct {
	ops []porcupine.Operation
}

// call records an operation's invocation and returns its handle.
func (h *history) call(now int64, in topicOp) int {
	h.ops = append(h.ops, porcupine.Operation{Input: in, Call: now, Output: outcomeUnknown, Return: never})
	return len(h.ops) - 1
}

// answer records its response.
func (h *history) answer(op int, now int64, code int16) {
	out := outcomeRefused
	switch code {
	case 0:
		out = outcomeOK
	case kerr.TopicAlreadyExists.Code:
		out = outcomeExists
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		out = outcomeUnknownTopic
	case kerr.NotController.Code, kerr.RequestTimedOut.Code, kerr.UnknownServerError.Code:
		return // stays unknown, answered never
	}

	h.ops[op].Output, h.ops[op].Return = out, now
}

var topicModel = porcupine.NondeterministicModel{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		byName := map[string][]porcupine.Operation{}
		for _, op := range ops {
			name := op.Input.(topicOp).name
			byName[name] = append(byName[name], op)
		}
		var out [][]porcupine.Operation
		for _, name := range topicNames {
			if len(byName[name]) > 0 {
				out = append(out, byName[name])
			}
		}
		return out
	},
	Init: func() []any { return []any{false} },
	Step: func(state, input, output any) []any {
		exists, in, out := state.(bool), input.(topicOp), output.(outcome)
		switch {
		case out == outcomeUnknown:
			return []any{exists, in.create}
		case out == outcomeRefused:
			return []any{exists}
		case in.create && out == outcomeOK && !exists, in.create && out == outcomeExists && exists:
			return []any{true}
		case !in.create && out == outcomeOK && exists, !in.create && out == outcomeUnknownTopic && !exists:
			return []any{false}
		}
		return nil
	},
}

// checkLinearizable checks the admin's history.
func (h *history) checkLinearizable() error {
	if len(h.ops) == 0 {
		return nil
	}
	switch porcupine.CheckOperationsTimeout(topicModel.ToModel(), h.ops, 10*time.Second) {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		return fmt.Errorf("the admin's topic operations are not linearizable (%d operations):\n%s", len(h.ops), h.describe())
	}
	return fmt.Errorf("linearizability check of %d operations timed out", len(h.ops))
}

var outcomeNames = []string{"ok", "exists", "unknown-topic", "refused", "unknown"}

// describe lists the operations, for the trace of a failing seed.
func (h *history) describe() string {
	var b strings.Builder
	for _, op := range h.ops {
		in := op.Input.(topicOp)
		verb := "delete"
		if in.create {
			verb = "create"
		}
		ret := "never"
		if op.Return != never {
			ret = fmt.Sprint(op.Return)
		}
		fmt.Fprintf(&b, "  [%d, %s] %s %s -> %s\n", op.Call, ret, verb, in.name, outcomeNames[op.Output.(outcome)])
	}
	return b.String()
}
