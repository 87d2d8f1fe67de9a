package compat

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// chunkAnswerBytes encodes a FetchSnapshot answer of one partition the way
// a leader sends it, tagged fields included.
func chunkAnswerBytes(version int16, chunk []byte) []byte {
	resp := kmsg.NewPtrFetchSnapshotResponse()
	resp.SetVersion(version)
	topic := kmsg.NewFetchSnapshotResponseTopic()
	topic.Topic = "__cluster_metadata"
	part := kmsg.NewFetchSnapshotResponseTopicPartition()
	part.SnapshotID.EndOffset, part.SnapshotID.Epoch = 1234, 5
	part.CurrentLeader.LeaderID, part.CurrentLeader.LeaderEpoch = 3000, 5
	part.Size, part.Position, part.Bytes = 1<<20, 4096, chunk
	topic.Partitions = append(topic.Partitions, part)
	resp.Topics = append(resp.Topics, topic)
	if version >= 1 {
		ep := kmsg.NewFetchSnapshotResponseNodeEndpoint()
		ep.NodeID, ep.Host, ep.Port = 3000, "127.0.0.1", 9093
		resp.NodeEndpoints = append(resp.NodeEndpoints, ep)
	}
	return resp.AppendTo(nil)
}

func TestReadChunkAnswerDropsTheChunk(t *testing.T) {
	for version := range int16(2) {
		chunk := bytes.Repeat([]byte{0xab}, 200_000) // several reader buffers
		r := NewStreamReader(bytes.NewReader(chunkAnswerBytes(version, chunk)))
		a := readChunkAnswer(r)
		if r.Err() != nil {
			t.Fatalf("v%d: %v", version, r.Err())
		}
		want := chunkAnswer{partitions: 1, size: 1 << 20, position: 4096, length: int64(len(chunk))}
		if a != want {
			t.Fatalf("v%d: read %+v, want %+v", version, a, want)
		}
		if n, _ := r.r.Read(make([]byte, 1)); n != 0 {
			t.Fatalf("v%d: the answer was not read to its end", version)
		}
		if err := a.check(4096); err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if err := a.check(0); err == nil {
			t.Fatalf("v%d: a chunk at the wrong position passed", version)
		}
	}
}

// FuzzReadChunkAnswer: whatever the bytes, the stream reader neither
// panics nor loops, and where kmsg decodes them as a one-partition answer
// both agree on what an observer needs (kmsg reads null bytes as empty).
func FuzzReadChunkAnswer(f *testing.F) {
	f.Add(chunkAnswerBytes(0, []byte("chunk")))
	f.Add(chunkAnswerBytes(1, nil))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewStreamReader(bytes.NewReader(b))
		a := readChunkAnswer(r)
		resp := kmsg.NewPtrFetchSnapshotResponse()
		resp.SetVersion(1)
		if r.Err() != nil || resp.ReadFrom(b) != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return
		}
		p := resp.Topics[0].Partitions[0]
		if a.errorCode != resp.ErrorCode || a.partitionError != p.ErrorCode || a.size != p.Size ||
			a.position != p.Position || max(a.length, 0) != int64(len(p.Bytes)) {
			t.Fatalf("stream read %+v; kmsg read error %d, partition %+v", a, resp.ErrorCode, p)
		}
	})
}
