package compat

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kraftd/kraftd/storage/uuid"
)

// TestWriteHistoryCatches feeds the chaos check histories and logs that are
// wrong in each way it must notice, and one that is right.
func TestWriteHistoryCatches(t *testing.T) {
	t.Parallel()
	id := [16]byte{1, 2, 3}
	idString := uuid.UUID(id).String()
	logWith := func(node int32, topics map[string]string, brokers map[int32][]int64) NodeLog {
		return NodeLog{Node: node, Topics: topics, Brokers: brokers}
	}
	for _, tc := range []struct {
		name  string
		write func(h *WriteHistory)
		logs  []NodeLog
		want  string // "" when the check must pass
	}{{
		name: "consistent",
		write: func(h *WriteHistory) {
			h.AnswerCreate(h.CallCreate("a"), "x", 0, id, nil)
			h.AnswerCreate(h.CallCreate("a"), "x", kerr.TopicAlreadyExists.Code, [16]byte{}, nil)
			h.AnswerCreate(h.CallCreate("b"), "x", kerr.NotController.Code, [16]byte{}, nil)
			h.Registered("x", 7, 42)
		},
		logs: []NodeLog{
			logWith(1, map[string]string{"a": idString, "b": "other"}, map[int32][]int64{7: {42}}),
			logWith(2, map[string]string{"a": idString, "b": "other"}, map[int32][]int64{7: {42}}),
		},
	}, {
		name:  "acknowledged topic missing on one node",
		write: func(h *WriteHistory) { h.AnswerCreate(h.CallCreate("a"), "x", 0, id, nil) },
		logs:  []NodeLog{logWith(1, map[string]string{"a": idString}, nil), logWith(2, map[string]string{}, nil)},
		want:  "node 2: acknowledged topic a",
	}, {
		name:  "acknowledged topic with another id",
		write: func(h *WriteHistory) { h.AnswerCreate(h.CallCreate("a"), "x", 0, id, nil) },
		logs:  []NodeLog{logWith(1, map[string]string{"a": "other"}, nil)},
		want:  "acknowledged topic a",
	}, {
		name:  "acknowledged registration missing",
		write: func(h *WriteHistory) { h.Registered("x", 7, 42) },
		logs:  []NodeLog{logWith(1, nil, map[int32][]int64{7: {41}})},
		want:  "broker 7 at epoch 42",
	}, {
		name: "created twice",
		write: func(h *WriteHistory) {
			h.AnswerCreate(h.CallCreate("a"), "x", 0, id, nil)
			h.AnswerCreate(h.CallCreate("a"), "y", 0, id, nil)
		},
		logs: []NodeLog{logWith(1, map[string]string{"a": idString}, nil)},
		want: "not linearizable",
	}, {
		name: "exists answered for a name no log holds",
		write: func(h *WriteHistory) {
			h.AnswerCreate(h.CallCreate("a"), "x", kerr.TopicAlreadyExists.Code, [16]byte{}, nil)
		},
		logs: []NodeLog{logWith(1, map[string]string{}, nil)},
		want: "not linearizable",
	}, {
		name:  "logs disagree on an unknown create",
		write: func(h *WriteHistory) { h.AnswerCreate(h.CallCreate("a"), "x", 0, [16]byte{}, errTest) },
		logs:  []NodeLog{logWith(1, map[string]string{"a": idString}, nil), logWith(2, map[string]string{}, nil)},
		want:  "not linearizable",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewWriteHistory()
			tc.write(h)
			errs, nonLinearizable := h.Check(tc.logs)
			if nonLinearizable != nil {
				errs = append(errs, nonLinearizable)
			}
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			all := strings.Join(got, "\n")
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("want no failure, got:\n%s", all)
			case tc.want != "" && !strings.Contains(all, tc.want):
				t.Fatalf("want a failure containing %q, got:\n%s", tc.want, all)
			}
		})
	}
}

var errTest = errorf("connection reset")
