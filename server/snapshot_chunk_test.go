package server

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/storage"
)

// A FetchSnapshot answer written around its chunk (frame, chunk from the
// file, suffix) is byte for byte the answer kmsg encodes with the chunk in
// it, at both versions, with and without the tagged fields after the
// chunk, from an OS file over TCP (sendfile) and from a memory file
// (through the buffer).
func TestChunkAnswerIsTheWholeAnswer(t *testing.T) {
	data := make([]byte, 3<<20+17)
	rand.New(rand.NewSource(1)).Read(data)
	for name, fsys := range map[string]storage.FS{"os": storage.OSFS{}, "mem": storage.NewMemFS()} {
		dir := t.TempDir()
		if name == "mem" {
			dir = "/snapshots"
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		id := storage.SnapshotID{EndOffset: 1234, Epoch: 7}
		w, err := storage.CreateSnapshot(fsys, dir, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Freeze(); err != nil {
			t.Fatal(err)
		}
		for _, version := range []int16{0, 1} {
			for _, tagged := range []bool{false, true} {
				pos, n := int64(1<<20+5), int64(2<<20)
				resp := chunkAnswer(version, tagged, id, int64(len(data)), pos)
				whole := *resp
				wp := whole.Topics[0].Partitions[0]
				wp.Bytes = data[pos : pos+n]
				whole.Topics = []kmsg.FetchSnapshotResponseTopic{{Topic: resp.Topics[0].Topic, Partitions: []kmsg.FetchSnapshotResponseTopicPartition{wp}}}
				h := protocol.RequestHeader{Key: 59, Version: version, CorrelationID: 99}
				want := protocol.AppendResponse(nil, h, &whole)

				snap, err := storage.OpenSnapshot(fsys, dir, id)
				if err != nil {
					t.Fatal(err)
				}
				chunk := node.NewSnapshotChunk(resp, snap, n)
				frame, tail, err := chunkFrame(h, chunk)
				if err != nil {
					t.Fatal(err)
				}
				got := sendOverTCP(t, frame, tail)
				chunk.Close()
				if !bytes.Equal(got, want) {
					t.Fatalf("%s v%d tagged=%v: %d bytes written, want %d (equal prefix %d)", name, version, tagged, len(got), len(want), commonPrefix(got, want))
				}
			}
		}
	}
}

func chunkAnswer(version int16, tagged bool, id storage.SnapshotID, size, pos int64) *kmsg.FetchSnapshotResponse {
	resp := kmsg.NewPtrFetchSnapshotResponse()
	resp.SetVersion(version)
	p := kmsg.NewFetchSnapshotResponseTopicPartition()
	p.SnapshotID.EndOffset, p.SnapshotID.Epoch, p.Size, p.Position = id.EndOffset, id.Epoch, size, pos
	if tagged {
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 7
		if version >= 1 {
			resp.NodeEndpoints = []kmsg.FetchSnapshotResponseNodeEndpoint{{NodeID: 2, Host: "127.0.0.1", Port: 9093}}
		}
	}
	resp.Topics = []kmsg.FetchSnapshotResponseTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.FetchSnapshotResponseTopicPartition{p}}}
	return resp
}

// sendOverTCP writes frame, the chunk and its suffix the way a responder
// does, to a loopback TCP connection, and returns what the peer read.
func sendOverTCP(t *testing.T, frame []byte, tail *chunkTail) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	read := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			read <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		read <- b
	}()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// Wrapped as accept wraps every connection: the wrapper must keep
	// the kernel's copy (sendfile) reachable.
	c := &countedConn{Conn: dialed, release: func() {}}
	if _, ok := dialed.(io.ReaderFrom); ok {
		if _, ok := net.Conn(c).(io.ReaderFrom); !ok {
			t.Fatal("the counted connection hides the TCP connection's ReadFrom: chunks would not go by sendfile")
		}
	}
	r := newResponder(c, func() {}, newMemBudget(-1), 1, 10*time.Second)
	if _, err := r.w.Write(frame); err != nil {
		t.Fatal(err)
	}
	if !r.writeTail(tail) || r.w.Flush() != nil {
		t.Fatal("writing the chunk failed")
	}
	c.Close()
	return <-read
}

func commonPrefix(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// A client that takes no bytes holds a chunk turn (chunkTurns) for
// turnHold at most: another client's download goes on meanwhile, long
// before the stuck one's write timeout.
func TestChunkTurnSkipsAClientThatDoesNotRead(t *testing.T) {
	defer func(turns chan struct{}) { chunkTurns = turns }(chunkTurns)
	chunkTurns = make(chan struct{}, 1) // one turn, as on two cores
	data := make([]byte, 16<<20)
	dir := t.TempDir()
	id := storage.SnapshotID{EndOffset: 10, Epoch: 1}
	w, err := storage.CreateSnapshot(storage.OSFS{}, dir, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peers := make(chan net.Conn, 2)
	go func() {
		for range 2 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			peers <- c
		}
	}()
	dial := func() *countedConn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return &countedConn{Conn: c, release: func() {}}
	}
	send := func(c net.Conn, n int64) chan error {
		snap, err := storage.OpenSnapshot(storage.OSFS{}, dir, id)
		if err != nil {
			t.Fatal(err)
		}
		resp := chunkAnswer(0, false, id, int64(len(data)), 0)
		tail := &chunkTail{chunk: node.NewSnapshotChunk(resp, snap, n)}
		done := make(chan error, 1)
		go func() {
			defer snap.Close()
			done <- tail.send(c, 5*time.Minute)
		}()
		return done
	}
	stuck := dial()
	defer stuck.Close()
	stuckPeer := <-peers // never read
	defer stuckPeer.Close()
	stuckDone := send(stuck, int64(len(data)))
	reader := dial()
	defer reader.Close()
	readerPeer := <-peers
	go io.Copy(io.Discard, readerPeer)
	select {
	case err := <-send(reader, 4<<20):
		if err != nil {
			t.Fatalf("the reading client's chunk: %v", err)
		}
	case err := <-stuckDone:
		t.Fatalf("the stuck client's send ended first (%v): the test did not fill its socket", err)
	}
	stuck.Close()
	<-stuckDone
}
