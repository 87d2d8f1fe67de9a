package node

import (
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/quorum"
	"github.com/kraftd/kraftd/storage"
)

// SnapshotChunk is a FetchSnapshot answer whose UnalignedRecords are still
// in the snapshot file: Len bytes from its partition's Position. Runner.Raft
// gives them to the server, which writes the bytes from the file straight
// to the connection (CopyData), so that a hundred observers downloading a
// large snapshot cost neither the quorum's loop nor the heap. Whoever holds
// one must Close it.
type SnapshotChunk struct {
	*kmsg.FetchSnapshotResponse
	Len  int64
	snap *storage.SnapshotReader
}

// CopyData writes bytes [off, off+n) of the chunk's data to w, through buf
// where a copy is needed (see storage.SnapshotReader.CopyRange).
func (c *SnapshotChunk) CopyData(w io.Writer, off, n int64, buf []byte) (int64, error) {
	return c.snap.CopyRange(w, c.Topics[0].Partitions[0].Position+off, n, buf)
}

// Close closes the snapshot file.
func (c *SnapshotChunk) Close() error { return c.snap.Close() }

// snapshotAnswer turns the core's answer m into what the waiter gets: for a
// FetchSnapshot chunk (m.SnapshotBytes), a SnapshotChunk when the waiter
// streams, else the answer with its bytes read in.
func (n *Node) snapshotAnswer(m quorum.Message, stream bool) kmsg.Response {
	resp, ok := m.Response.(*kmsg.FetchSnapshotResponse)
	if m.SnapshotBytes <= 0 || !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return m.Response
	}
	rp := &resp.Topics[0].Partitions[0]
	snap, err := n.disk.Log.OpenSnapshot(storage.SnapshotID{EndOffset: rp.SnapshotID.EndOffset, Epoch: rp.SnapshotID.Epoch})
	if err != nil {
		rp.ErrorCode = kerr.SnapshotNotFound.Code // deleted since the core named it
		return resp
	}
	if stream {
		return &SnapshotChunk{FetchSnapshotResponse: resp, Len: m.SnapshotBytes, snap: snap}
	}
	defer snap.Close()
	if rp.Bytes, err = snap.ReadAt(rp.Position, int(m.SnapshotBytes)); err != nil {
		rp.ErrorCode, rp.Bytes = kerr.SnapshotNotFound.Code, nil
	}
	return resp
}

// NewSnapshotChunk is a SnapshotChunk of the n bytes of snap from resp's
// partition's Position, for a server's tests.
func NewSnapshotChunk(resp *kmsg.FetchSnapshotResponse, snap *storage.SnapshotReader, n int64) *SnapshotChunk {
	return &SnapshotChunk{FetchSnapshotResponse: resp, Len: n, snap: snap}
}
