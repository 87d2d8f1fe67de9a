package node

import (
	"bufio"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

// SnapshotPolicy is when to write metadata snapshots and how much history
// to keep, in Apache's terms (SnapshotGenerator, KafkaMetadataLog.maybeClean).
type SnapshotPolicy struct {
	// MaxBytes is metadata.log.max.record.bytes.between.snapshots: snapshot
	// once this many bytes of batches committed since the last snapshot.
	MaxBytes int64
	// IntervalMs is metadata.log.max.snapshot.interval.ms: snapshot when new
	// records committed and this long passed since the last snapshot; 0
	// turns the timer off.
	IntervalMs int64
	// RetentionBytes and RetentionMs are metadata.max.retention.bytes and
	// .ms: while the log and snapshots together are larger, or the oldest
	// snapshot is older, delete the oldest snapshot and the log it covers.
	// The newest snapshot always stays. -1 turns a limit off.
	RetentionBytes int64
	RetentionMs    int64
	// Gzip compresses snapshots' data batches (metadata.SnapshotOptions).
	Gzip bool
}

// Snapshotter writes snapshots of the committed metadata log and applies
// retention, without stopping the node: the node loop tells it how far the
// log is committed (MaybeSnapshot, cheap), and when a snapshot is due it is
// built and written on a goroutine of its own.
//
// The snapshot's image is a frozen copy-on-write copy of the state
// machine's (metadata.Image.Freeze), taken on the loop when the image holds
// exactly the committed batches the snapshot ends at, which is the usual
// case: replay stops at the high watermark, a batch boundary. Otherwise
// (the high watermark inside a batch) it is rebuilt from disk, the newest
// snapshot at or below the chosen offset plus the log after it, which
// costs a second image while the snapshot is written. The kraft.version
// and voter set its header repeats
// come from their one owner, the quorum core's voter-set history
// (ControlStateFunc), asked on the loop when the snapshot is started.
//
// All methods are for the node loop goroutine only.
type Snapshotter struct {
	fs     storage.FS
	log    *storage.Log
	policy SnapshotPolicy
	logger zerolog.Logger
	now    func() time.Time
	run    Executor

	controlAt ControlStateFunc
	freeze    FreezeFunc

	scanned      int64         // committed batches below this were counted
	bytesSince   int64         // batch bytes committed since the last snapshot
	newRecords   bool          // anything committed since the last snapshot
	lastSnapshot time.Time     // when the last snapshot was started
	point        snapshotPoint // newest batch-aligned committed point
	running      <-chan error  // non-nil while a snapshot is being written
	scratch      snapshotScratch
	// written, if set, learns of each snapshot written (the meter's).
	written func(bytes int64, at time.Time)
}

// snapshotPoint is the end of a committed batch: where a snapshot can end.
type snapshotPoint struct {
	id        storage.SnapshotID
	timestamp int64 // the batch's max timestamp: LastContainedLogTimestamp
}

// NewSnapshotter counts the log from the newest snapshot on, so that after
// a restart the bytes committed before it still count, as Apache's
// replay does.
func NewSnapshotter(fsys storage.FS, log *storage.Log, policy SnapshotPolicy, clock Clock, run Executor, controlAt ControlStateFunc, freeze FreezeFunc, logger zerolog.Logger) *Snapshotter {
	s := &Snapshotter{fs: fsys, log: log, policy: policy, logger: logger.With().Str("component", "snapshots").Logger(), now: clock.Now, run: run, controlAt: controlAt, freeze: freeze}
	s.lastSnapshot = s.now()
	s.resetScan()
	return s
}

func (s *Snapshotter) resetScan() {
	s.scanned = s.log.StartOffset()
	if id, ok := s.log.LatestSnapshot(); ok && id.EndOffset > s.scanned {
		s.scanned = id.EndOffset
	}
	s.bytesSince, s.newRecords = 0, false
}

// MaybeSnapshot is called by the node loop once records below hw (the high
// watermark) are committed. It accounts the newly committed batches and,
// when a snapshot is due and none is being written, starts writing one that
// ends at the last whole committed batch, at urgency. Failures are logged,
// never returned: a missed snapshot costs disk space, not correctness.
func (s *Snapshotter) MaybeSnapshot(hw int64, urgency Urgency) {
	s.collect(false)
	if err := s.scan(hw); err != nil {
		s.logger.Warn().Err(err).Int64("high_watermark", hw).Msg("cannot account committed batches; recounting from the newest snapshot")
		s.resetScan()
		return
	}
	if s.running != nil || !s.newRecords {
		return
	}
	// The reason is written only when due: this runs for every committed batch.
	bySize := s.bytesSince >= s.policy.MaxBytes
	byTime := !bySize && s.policy.IntervalMs > 0 && s.now().Sub(s.lastSnapshot) >= time.Duration(s.policy.IntervalMs)*time.Millisecond
	if !bySize && !byTime {
		return
	}
	if latest, ok := s.log.LatestSnapshot(); ok && latest.EndOffset >= s.point.id.EndOffset {
		s.bytesSince, s.newRecords = 0, false
		return
	}
	point := s.point
	reason := fmt.Sprintf("%d bytes committed since the last snapshot", s.bytesSince)
	if byTime {
		reason = fmt.Sprintf("%d ms since the last snapshot", s.policy.IntervalMs)
	}
	s.logger.Info().Stringer("snapshot", point.id).Str("reason", reason).Msg("writing metadata snapshot")
	s.bytesSince, s.newRecords, s.lastSnapshot = 0, false, s.now()
	state, im := s.stateAt(point), s.frozenAt(point)
	s.running = s.run(urgency, func() error { return s.writeAndClean(point, state, im) })
}

// Close waits for a snapshot being written; the node calls it before it
// closes the log.
func (s *Snapshotter) Close() { s.collect(true) }

func (s *Snapshotter) collect(wait bool) {
	if s.running == nil {
		return
	}
	var err error
	if wait {
		err = <-s.running
	} else {
		select {
		case err = <-s.running:
		default:
			return
		}
	}
	s.running = nil
	switch {
	case errors.Is(err, errInTransaction):
		// Try again at the next committed batch, which may close it.
		s.logger.Debug().Err(err).Msg("metadata snapshot postponed")
		s.bytesSince = max(s.bytesSince, s.policy.MaxBytes)
	case err != nil:
		// Not retried before the next threshold: a rebuild is expensive,
		// and an unwritable image stays unwritable for a while.
		s.logger.Warn().Err(err).Msg("metadata snapshot failed")
	}
}

// errInTransaction: the snapshot point lies inside a metadata transaction.
var errInTransaction = errors.New("the offset is inside a metadata transaction")

// scan counts the whole batches in [scanned, hw).
func (s *Snapshotter) scan(hw int64) error {
	for s.scanned < hw {
		raw, err := s.log.Read(s.scanned, 1<<20)
		if err != nil {
			return err
		}
		progressed := false
		_, err = batch.Walk(raw, func(h batch.Header, _ []byte) error {
			if h.NextOffset() > hw {
				return errStopWalk
			}
			s.bytesSince += int64(h.Size())
			s.newRecords = true
			s.point = snapshotPoint{id: storage.SnapshotID{EndOffset: h.NextOffset(), Epoch: h.PartitionLeaderEpoch}, timestamp: h.MaxTimestamp}
			s.scanned = h.NextOffset()
			progressed = true
			return nil
		})
		if err != nil && !errors.Is(err, errStopWalk) {
			return err
		}
		if !progressed {
			return nil // the batch holding hw is not wholly committed yet
		}
	}
	return nil
}

// stateAt is the kraft.version and voter set a snapshot ending at point
// repeats in its header.
func (s *Snapshotter) stateAt(point snapshotPoint) quorumState {
	kv, voters := s.controlAt(point.id.EndOffset - 1)
	return quorumState{kraftVersion: kv, voters: voters}
}

// frozenAt is a frozen copy of the state machine's image if it holds
// exactly the records below point, else nil.
func (s *Snapshotter) frozenAt(point snapshotPoint) *metadata.Image {
	if s.freeze == nil {
		return nil
	}
	return s.freeze(point.id.EndOffset - 1)
}

// writeAndClean writes the snapshot ending at point from im (a frozen
// image holding exactly the records below it), or from an image rebuilt
// from disk when im is nil, then applies retention.
func (s *Snapshotter) writeAndClean(point snapshotPoint, state quorumState, im *metadata.Image) error {
	start := s.now()
	from := "frozen image"
	if im == nil {
		var err error
		if im, err = rebuildImage(s.log, point.id.EndOffset); err != nil {
			return fmt.Errorf("rebuild the image at %d: %w", point.id.EndOffset, err)
		}
		from = "log"
	} else if im.InTransaction() {
		return fmt.Errorf("%w: %d", errInTransaction, point.id.EndOffset)
	}
	size, err := writeSnapshot(s.log, point, im, state, s.now(), s.policy.Gzip, &s.scratch)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", point.id, err)
	}
	s.logger.Info().Stringer("snapshot", point.id).Str("from", from).Int64("bytes", size).Dur("took_ms", s.now().Sub(start)).Msg("wrote metadata snapshot")
	if s.written != nil {
		s.written(size, s.now())
	}
	return cleanSnapshots(s.fs, s.log, s.policy, s.now(), s.logger)
}

// FreezeFunc is StateMachine.FreezeImage: a frozen copy of the image if it
// holds exactly the records up to lastOffset, else nil. It is called on the
// loop goroutine.
type FreezeFunc func(lastOffset int64) *metadata.Image

// ControlStateFunc returns the kraft.version and voter set in force at
// offset (voters nil where the static set holds), from the quorum core
// (quorum.Node.ControlStateAt). It is called on the loop goroutine.
type ControlStateFunc func(offset int64) (kraftVersion int16, voters *metadata.VotersRecord)

// quorumState is the kraft.version and voter set as of an offset, which a
// snapshot's header batch repeats.
type quorumState struct {
	kraftVersion int16
	voters       *metadata.VotersRecord
}

// snapshotScratch is the memory writing a snapshot needs, kept from one
// snapshot to the next; one snapshot is written at a time.
type snapshotScratch struct {
	file    *bufio.Writer
	buffers metadata.SnapshotBuffers
}

func writeSnapshot(log *storage.Log, point snapshotPoint, im *metadata.Image, state quorumState, now time.Time, gzip bool, scratch *snapshotScratch) (int64, error) {
	w, err := log.CreateSnapshot(point.id)
	if err != nil {
		return 0, err
	}
	buf := scratch.file
	if buf == nil {
		buf = bufio.NewWriterSize(snapshotSink{w}, 1<<20)
		scratch.file = buf
	} else {
		buf.Reset(snapshotSink{w})
	}
	defer buf.Reset(nil) // not keeping the file
	size, err := metadata.WriteSnapshot(buf, im, metadata.SnapshotOptions{
		Epoch: point.id.Epoch, LastContainedLogTimestamp: point.timestamp, Timestamp: now.UnixMilli(),
		KRaftVersion: state.kraftVersion, Voters: state.voters, Buffers: &scratch.buffers, Gzip: gzip,
	})
	if err == nil {
		err = buf.Flush()
	}
	if err == nil {
		err = w.Freeze()
	}
	if err != nil {
		w.Abort()
		return 0, err
	}
	return size, nil
}

// snapshotSink is the io.Writer of a storage snapshot writer.
type snapshotSink struct{ w *storage.SnapshotWriter }

func (s snapshotSink) Write(p []byte) (int, error) {
	if err := s.w.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// readSnapshot reads a frozen snapshot sequentially through a buffer no
// larger than the snapshot (a fresh cluster's is a few hundred bytes).
func readSnapshot(r *storage.SnapshotReader) *bufio.Reader {
	return bufio.NewReaderSize(&snapshotSource{r: r}, int(min(r.Size(), 1<<20)))
}

// snapshotSource reads a frozen snapshot sequentially.
type snapshotSource struct {
	r   *storage.SnapshotReader
	pos int64
}

func (s *snapshotSource) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := s.r.ReadInto(p, s.pos)
	s.pos += int64(n)
	return n, err
}

// rebuildImage builds the image of the committed log below end: the newest
// snapshot at or below end, then the log's data records up to end. Records
// the image rejects are skipped, as the controller's replay skips them.
func rebuildImage(log *storage.Log, end int64) (*metadata.Image, error) {
	im := metadata.NewImage()
	next := log.StartOffset()
	var base *storage.SnapshotID
	for _, id := range log.Snapshots() {
		if id.EndOffset <= end {
			base = &id
		}
	}
	if base != nil {
		r, err := log.OpenSnapshot(*base)
		if err != nil {
			return nil, err
		}
		loaded, _, err := metadata.LoadSnapshot(readSnapshot(r))
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", base, err)
		}
		im, next = loaded, base.EndOffset
	} else if next > 0 {
		return nil, fmt.Errorf("the log starts at %d and no snapshot covers what is before it", next)
	}
	reached, err := ForEachLogRecord(log, next, end, func(_ int64, rec metadata.Record, raw batch.Record) error {
		if rec != nil {
			im.Apply(rec) // a rejected record leaves the image as it was
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if reached < end {
		return nil, fmt.Errorf("the log ends at %d, before %d", reached, end)
	}
	if im.InTransaction() {
		// Apache only snapshots outside a transaction; the records of an
		// open one are not part of the image and are not written.
		return im, fmt.Errorf("%w: %d", errInTransaction, end)
	}
	return im, nil
}

// cleanSnapshots is KafkaMetadataLog.maybeClean: first by size, then by
// age, delete the oldest snapshot together with the log segments the next
// snapshot covers, never the newest snapshot and never a log the newest
// snapshot does not cover.
func cleanSnapshots(fsys storage.FS, log *storage.Log, policy SnapshotPolicy, now time.Time, logger zerolog.Logger) error {
	if policy.RetentionBytes >= 0 {
		ids := log.Snapshots()
		sizes := make([]int64, len(ids))
		var total int64
		for i, id := range ids {
			r, err := log.OpenSnapshot(id)
			if err != nil {
				return err
			}
			sizes[i] = r.Size()
			r.Close()
			total += sizes[i]
		}
		for i := 0; i+1 < len(ids); i++ {
			logSize, err := segmentBytes(fsys, log.Dir())
			if err != nil {
				return err
			}
			if logSize+total <= policy.RetentionBytes {
				break
			}
			if !deleteBefore(log, ids[i+1], logger, "metadata.max.retention.bytes") {
				break
			}
			total -= sizes[i]
		}
	}
	if policy.RetentionMs >= 0 {
		ids := log.Snapshots()
		for i := 0; i+1 < len(ids); i++ {
			ts, err := snapshotTimestamp(log, ids[i])
			if err != nil {
				return err
			}
			if now.UnixMilli()-ts <= policy.RetentionMs {
				break
			}
			if !deleteBefore(log, ids[i+1], logger, "metadata.max.retention.ms") {
				break
			}
		}
	}
	return nil
}

// deleteBefore moves the log start up to next (a snapshot that is not
// older than the newest) and deletes the snapshots before it, as Apache's
// deleteBeforeSnapshot does. It reports whether it did anything.
func deleteBefore(log *storage.Log, next storage.SnapshotID, logger zerolog.Logger, reason string) bool {
	latest, ok := log.LatestSnapshot()
	if !ok || next.EndOffset > latest.EndOffset || log.StartOffset() >= next.EndOffset {
		return false
	}
	if err := log.DeleteSegmentsBefore(next.EndOffset); err != nil {
		logger.Warn().Err(err).Msg("cannot advance the log start")
		return false
	}
	for _, id := range log.Snapshots() {
		if id.EndOffset < next.EndOffset {
			if err := log.DeleteSnapshot(id); err != nil {
				logger.Warn().Err(err).Stringer("snapshot", id).Msg("cannot delete snapshot")
				return false
			}
			logger.Info().Stringer("snapshot", id).Str("reason", reason).Int64("log_start", next.EndOffset).Msg("deleted snapshot and the log before the next one")
		}
	}
	return true
}

// segmentBytes is the size of the log's segment files (UnifiedLog.size).
func segmentBytes(fsys storage.FS, dir string) (int64, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, name := range names {
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		st, err := fsys.Stat(filepath.Join(dir, name))
		if err != nil {
			continue // deleted meanwhile
		}
		total += st.Size()
	}
	return total, nil
}

// snapshotTimestamp reads a snapshot's LastContainedLogTimestamp from its
// header batch, reading nothing after it: retention asks for the oldest
// snapshot's on every snapshot written.
func snapshotTimestamp(log *storage.Log, id storage.SnapshotID) (int64, error) {
	r, err := log.OpenSnapshot(id)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	info, err := metadata.ReadSnapshotHeader(&snapshotSource{r: r})
	if err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return info.LastContainedLogTimestamp, nil
}
