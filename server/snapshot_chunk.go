// snapshot_chunk.go writes a FetchSnapshot answer whose chunk is still in
// the snapshot file (node.SnapshotChunk): the answer's encoding up to the
// chunk's length, then the chunk from the file (sendfile on a plaintext
// TCP connection, a pooled buffer otherwise), then the rest of the answer.
// The chunk never enters the heap, so observers downloading a large
// snapshot at once cost the process no memory.

package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/kraftd/kraftd/node"
	"github.com/kraftd/kraftd/protocol"
)

// chunkMarker stands in for a chunk's bytes while the rest of its answer
// is encoded, to find where they go; 16 bytes no answer field holds.
var chunkMarker = []byte("\x00\xffkraftd-chunk\xfe\x00")

// chunkTail is what a pending answer writes after its frame: the chunk's
// bytes from the file, then the end of the encoding.
type chunkTail struct {
	chunk  *node.SnapshotChunk
	suffix []byte
}

// chunkFrame encodes c's answer around its chunk: the frame up to and
// including the chunk's length (the frame's size counts the chunk), and
// the tail to write after it.
func chunkFrame(h protocol.RequestHeader, c *node.SnapshotChunk) ([]byte, *chunkTail, error) {
	rp := &c.Topics[0].Partitions[0]
	rp.Bytes = chunkMarker
	frame := protocol.AppendResponse(nil, h, c.FetchSnapshotResponse)
	rp.Bytes = nil
	// FetchSnapshot is flexible from v0: compact bytes, uvarint(len+1).
	i := bytes.LastIndex(frame, chunkMarker)
	if i < 1 || frame[i-1] != byte(len(chunkMarker)+1) || c.Len < 0 || c.Len > 1<<30 {
		return nil, nil, fmt.Errorf("server: FetchSnapshot v%d answer of a %d-byte chunk does not encode around it", h.Version, c.Len)
	}
	prefix := kbin.AppendUvarint(append([]byte(nil), frame[:i-1]...), uint32(c.Len+1))
	suffix := frame[i+len(chunkMarker):]
	binary.BigEndian.PutUint32(prefix, uint32(len(prefix)-4+int(c.Len)+len(suffix)))
	return prefix, &chunkTail{chunk: c, suffix: suffix}, nil
}

// copyBuffers are the buffers a chunk is copied through where the kernel
// cannot send it from the file itself (TLS, SASL-wrapped connections).
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// errShortChunk means the snapshot file ended before the chunk did.
var errShortChunk = errors.New("server: snapshot file shorter than its chunk")

// chunkTurns bounds how many chunks are copied to plaintext connections
// at once, process-wide: one for every two cores, one or two. A hundred
// observers downloading a snapshot at once, each copy on a thread of its
// own in the kernel, leave every other thread (the quorum's loop, the
// followers, a client's write) queued for a CPU behind them; taken in
// turns, the copies cost the same CPU, at the pace the cores allow,
// while a write waits for one copy at most. A turn copies writeChunk
// bytes.
var chunkTurns = make(chan struct{}, min(2, max(1, runtime.NumCPU()/2)))

// turnHold is how long one turn may wait for a client to take its bytes
// before giving the turn up (and queueing again): a client that reads
// slowly, or not at all, cannot hold up the others' downloads.
const turnHold = 20 * time.Millisecond

// send writes the chunk's bytes to c, writeChunk at a time, failing once
// the client has taken nothing for timeout, as deadlineWriter does for
// frames. To a plaintext connection (sendfile) the pieces are copied in
// turns (chunkTurns); a TLS connection cannot give up a write midway, so
// its copies are not taken in turns.
func (t *chunkTail) send(c net.Conn, timeout time.Duration) error {
	_, inTurns := c.(*countedConn)
	var buf []byte // the kernel copies to a plaintext connection: no buffer held while waiting for a turn
	if !inTurns {
		b := copyBuffers.Get().(*[]byte)
		defer copyBuffers.Put(b)
		buf = *b
	}
	progress := time.Now()
	for off := int64(0); off < t.chunk.Len; {
		n := min(int64(writeChunk), t.chunk.Len-off)
		hold := timeout
		if inTurns {
			chunkTurns <- struct{}{}
			hold = min(timeout, turnHold)
		}
		c.SetWriteDeadline(time.Now().Add(hold))
		k, err := t.chunk.CopyData(c, off, n, buf)
		if inTurns {
			<-chunkTurns
		}
		off += k
		if k > 0 {
			progress = time.Now()
		}
		switch {
		case inTurns && errors.Is(err, os.ErrDeadlineExceeded) && time.Since(progress) < timeout:
			continue // the turn is over, not the client's time
		case err != nil:
			return err
		case k < n:
			return errShortChunk
		}
	}
	return nil
}

// ReadFrom lets io.Copy reach the accepted connection's own ReadFrom, so a
// chunk copied to a counted plaintext TCP connection still goes by
// sendfile: without it the wrapper hides *net.TCPConn's ReadFrom and every
// chunk is read into the process and written out again (3.7 GB a round of
// the scale benchmark's catch-up storm). On a TLS listener the chunk goes
// to the tls.Conn around this one, which encrypts it and only ever calls
// Write here.
func (c *countedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}
