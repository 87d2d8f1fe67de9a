package storage

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kraftd/kraftd/storage/uuid"
)

// EpochEntry says that leader epoch Epoch starts at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is Apache's LeaderEpochFileCache: entries sorted by epoch, and
// by start offset too, because assign keeps both monotonic.
type epochCache struct {
	entries []EpochEntry
}

func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at startOffset, first dropping every entry
// that would break monotonicity (an epoch at or above it, or a start offset
// at or above it). It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, startOffset int64) bool {
	if epoch < 0 || startOffset < 0 {
		return false
	}
	if last, ok := c.latest(); ok && last.Epoch == epoch && startOffset >= last.StartOffset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= startOffset) {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{epoch, startOffset})
	return true
}

// truncateFromEnd drops the entries starting at or after endOffset.
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart drops the entries starting at or before startOffset and
// keeps the last of them, moved to start at startOffset.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 {
		return false
	}
	first := EpochEntry{c.entries[i-1].Epoch, startOffset}
	c.entries = append([]EpochEntry{first}, c.entries[i:]...)
	return true
}

// endOffsetFor is LeaderEpochFileCache.endOffsetFor: for the requested epoch,
// the greatest known epoch at or below it and the start offset of the next
// epoch (logEndOffset for the latest epoch); (-1, -1) when unknown.
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested == -1 {
		return -1, -1
	}
	if last, ok := c.latest(); ok && last.Epoch == requested {
		return requested, logEndOffset
	}
	higher := -1
	for i, e := range c.entries {
		if e.Epoch > requested {
			higher = i
			break
		}
	}
	if higher < 0 {
		return -1, -1
	}
	if higher == 0 {
		// Older than anything kept: the data was removed; point at the start
		// of the first epoch we know.
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

func (c *epochCache) clone() []EpochEntry { return append([]EpochEntry(nil), c.entries...) }

// LeaderEpochCheckpointName is the file holding the epoch cache.
const LeaderEpochCheckpointName = "leader-epoch-checkpoint"

// EncodeLeaderEpochCheckpoint renders entries as Apache's CheckpointFile
// does: the format version 0, the entry count, then "epoch startOffset"
// lines, every line ending in "\n".
func EncodeLeaderEpochCheckpoint(entries []EpochEntry) []byte {
	var b bytes.Buffer
	b.WriteString("0\n")
	b.WriteString(strconv.Itoa(len(entries)))
	b.WriteByte('\n')
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// ErrBadCheckpoint means a leader-epoch-checkpoint could not be parsed.
var ErrBadCheckpoint = errors.New("storage: malformed leader-epoch-checkpoint")

// ParseLeaderEpochCheckpoint reads a leader-epoch-checkpoint. Like Apache, an
// empty file (or one with only the version line) holds no entries, entries
// are split on any whitespace, and the count must match.
func ParseLeaderEpochCheckpoint(data []byte) ([]EpochEntry, error) {
	lines := strings.Split(string(data), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	if len(lines) == 0 {
		return nil, nil
	}
	if v, err := strconv.Atoi(lines[0]); err != nil || v != 0 {
		return nil, fmt.Errorf("%w: version line %q", ErrBadCheckpoint, lines[0])
	}
	if len(lines) == 1 {
		return nil, nil
	}
	count, err := strconv.Atoi(lines[1])
	if err != nil || count < 0 {
		return nil, fmt.Errorf("%w: count line %q", ErrBadCheckpoint, lines[1])
	}
	var out []EpochEntry
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: line %q", ErrBadCheckpoint, l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: line %q", ErrBadCheckpoint, l)
		}
		out = append(out, EpochEntry{int32(e), o})
	}
	if len(out) != count {
		return nil, fmt.Errorf("%w: %d entries, count says %d", ErrBadCheckpoint, len(out), count)
	}
	return out, nil
}

// PartitionMetadataName is the file naming the partition's topic id.
const PartitionMetadataName = "partition.metadata"

// EncodePartitionMetadata renders partition.metadata as PartitionMetadata.encode
// does: two lines and, unlike the other checkpoint files, no final newline.
func EncodePartitionMetadata(topicID uuid.UUID) []byte {
	return []byte("version: 0\ntopic_id: " + topicID.String())
}

// ParsePartitionMetadata reads partition.metadata (version 0 only).
func ParsePartitionMetadata(data []byte) (uuid.UUID, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	if len(lines) != 2 {
		return uuid.UUID{}, fmt.Errorf("storage: partition.metadata has %d lines, want 2", len(lines))
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(lines[0]), "version:")
	if !ok || strings.TrimSpace(v) != "0" {
		return uuid.UUID{}, fmt.Errorf("storage: partition.metadata: bad version line %q", lines[0])
	}
	t, ok := strings.CutPrefix(strings.TrimSpace(lines[1]), "topic_id:")
	if !ok {
		return uuid.UUID{}, fmt.Errorf("storage: partition.metadata: bad topic_id line %q", lines[1])
	}
	id, err := uuid.Parse(strings.TrimSpace(t))
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("storage: partition.metadata topic_id: %w", err)
	}
	return id, nil
}
