package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/controller"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage"
	"github.com/kraftd/kraftd/storage/batch"
)

func metadataShellCommand() *cli.Command {
	return &cli.Command{
		Name:  "metadata-shell",
		Usage: "print the metadata image of a metadata.log.dir (newest snapshot plus the log after it), like kafka-metadata-shell.sh",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Required: true, Usage: "the metadata.log.dir (or its " + storage.MetadataLogDirName + " directory)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
		},
		Action: func(c *cli.Context) error {
			view, err := loadDirImage(c.String("dir"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(view.json())
			}
			view.print(os.Stdout)
			return nil
		},
	}
}

// dirImage is the image found in a metadata log directory.
type dirImage struct {
	dir          string
	snapshot     string // file name, "" when none
	snapRecords  int64
	logRecords   int64
	endOffset    int64 // one past the last record read
	kraftVersion int16
	voters       *metadata.VotersRecord
	image        *metadata.Image
	warnings     []string
	batch        batch.Header // the batch being replayed
}

// loadDirImage reads the directory through storage.ListLogFiles, without
// locking it or changing a file, so it is safe beside a running node: it
// may see an unfinished tail, which it reports and stops at. Like Apache's metadata shell it shows every record
// on disk, committed or not.
func loadDirImage(dir string) (*dirImage, error) {
	files, err := storage.ListLogFiles(storage.OSFS{}, dir)
	if err != nil {
		return nil, err
	}
	v := &dirImage{dir: files.Dir, image: metadata.NewImage()}
	if files.HasSnapshot {
		v.snapshot = files.Snapshot.FileName()
		if err := v.loadSnapshot(files); err != nil {
			return nil, fmt.Errorf("%s: %w", v.snapshot, err)
		}
		v.endOffset = files.Snapshot.EndOffset
	}
	for _, base := range files.Segments {
		if err := v.replaySegment(files, base); err != nil {
			v.warnings = append(v.warnings, fmt.Sprintf("%s: %v; stopped there", storage.SegmentName(base), err))
			break
		}
	}
	if v.image.InTransaction() {
		v.warnings = append(v.warnings, "a metadata transaction is open at the end of the log; its records are not shown")
	}
	return v, nil
}

func (v *dirImage) loadSnapshot(files *storage.LogFiles) error {
	f, err := files.OpenSnapshot()
	if err != nil {
		return err
	}
	defer f.Close()
	im, info, err := metadata.LoadSnapshot(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return err
	}
	v.image, v.snapRecords, v.kraftVersion, v.voters = im, info.Records, info.KRaftVersion, info.Voters
	return nil
}

// maxSegmentBatch bounds one batch read from a segment.
const maxSegmentBatch = batch.LogOverhead + 1<<30

// replaySegment applies the records of one segment at or after endOffset.
func (v *dirImage) replaySegment(files *storage.LogFiles, base int64) error {
	f, err := files.OpenSegment(base)
	if err != nil {
		return err
	}
	defer f.Close()
	batches := batch.NewReader(bufio.NewReaderSize(f, 1<<20), maxSegmentBatch)
	var scan batch.Scanner // one record at a time, however many a batch packs
	for {
		h, raw, err := batches.Next()
		v.batch = h
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, batch.ErrShort) {
			return errors.New("partial batch at the end")
		}
		if err != nil {
			return err
		}
		if _, err := scan.Scan(raw, v.logRecord); err != nil {
			return err
		}
	}
}

// logRecord applies one record of the batch v.batch.
func (v *dirImage) logRecord(rec batch.Record) error {
	offset := v.batch.BaseOffset + int64(rec.OffsetDelta)
	if offset < v.endOffset {
		return nil
	}
	v.endOffset = offset + 1
	if v.batch.IsControl() {
		v.control(rec)
		return nil
	}
	m, err := metadata.DecodeValue(rec.Value)
	if err != nil {
		return fmt.Errorf("offset %d: %w", offset, err)
	}
	v.logRecords++
	if err := v.image.Apply(m); err != nil {
		v.warnings = append(v.warnings, fmt.Sprintf("offset %d: %v (skipped, as the controller does)", offset, err))
	}
	return nil
}

func (v *dirImage) control(rec batch.Record) {
	c, err := metadata.DecodeControl(rec.Key, rec.Value)
	if err != nil {
		return
	}
	switch c := c.(type) {
	case *metadata.KRaftVersionRecord:
		v.kraftVersion = c.KRaftVersion
	case *metadata.VotersRecord:
		v.voters = c
	}
}

// configTypeName is Apache's ConfigResource.Type by id.
func configTypeName(t int8) string {
	switch t {
	case 2:
		return "topic"
	case 4:
		return "broker"
	case 8:
		return "broker-logger"
	case 16:
		return "client-metrics"
	case 32:
		return "group"
	}
	return "type-" + strconv.Itoa(int(t))
}

func sortedTopics(im *metadata.Image) []*metadata.Topic {
	return slices.SortedFunc(maps.Values(im.Topics), func(a, b *metadata.Topic) int { return cmp.Compare(a.Name, b.Name) })
}

func sortedConfigs(im *metadata.Image) []metadata.ConfigResource {
	return slices.SortedFunc(maps.Keys(im.Configs), func(a, b metadata.ConfigResource) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.Name, b.Name))
	})
}

func (v *dirImage) print(w io.Writer) {
	im := v.image
	fmt.Fprintf(w, "directory: %s\n", v.dir)
	if v.snapshot != "" {
		fmt.Fprintf(w, "snapshot: %s (%d records)\n", v.snapshot, v.snapRecords)
	} else {
		fmt.Fprintln(w, "snapshot: none")
	}
	fmt.Fprintf(w, "log: %d records replayed, end offset %d (uncommitted records included)\n", v.logRecords, v.endOffset)
	for _, warning := range v.warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	fmt.Fprintf(w, "kraft.version: %d\n", v.kraftVersion)
	if v.voters != nil {
		for _, voter := range v.voters.Voters {
			fmt.Fprintf(w, "  voter %d directory %s endpoints %s\n", voter.VoterId, voter.VoterDirectoryId, votersEndpoints(voter))
		}
	}
	fmt.Fprintln(w, "features:")
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		level := im.Features[name]
		if name == controller.MetadataVersionFeature {
			fmt.Fprintf(w, "  %s: %d (%s)\n", name, level, controller.MetadataVersionName(level))
			continue
		}
		fmt.Fprintf(w, "  %s: %d\n", name, level)
	}
	fmt.Fprintln(w, "brokers:")
	for _, id := range slices.Sorted(maps.Keys(im.Brokers)) {
		b := im.Brokers[id]
		rack := "none"
		if b.Rack != nil {
			rack = *b.Rack
		}
		var eps []string
		for _, e := range b.EndPoints {
			eps = append(eps, fmt.Sprintf("%s://%s:%d", e.Name, e.Host, e.Port))
		}
		fmt.Fprintf(w, "  %d: epoch %d, incarnation %s, fenced %v, in controlled shutdown %v, rack %s, endpoints %s, log dirs %v\n",
			id, b.BrokerEpoch, b.IncarnationId, b.Fenced, b.InControlledShutdown, rack, strings.Join(eps, ","), b.LogDirs)
	}
	fmt.Fprintln(w, "controllers:")
	for _, id := range slices.Sorted(maps.Keys(im.Controllers)) {
		c := im.Controllers[id]
		var eps []string
		for _, e := range c.EndPoints {
			eps = append(eps, fmt.Sprintf("%s://%s:%d", e.Name, e.Host, e.Port))
		}
		fmt.Fprintf(w, "  %d: incarnation %s, endpoints %s\n", id, c.IncarnationId, strings.Join(eps, ","))
	}
	fmt.Fprintf(w, "topics: %d\n", len(im.Topics))
	for _, t := range sortedTopics(im) {
		fmt.Fprintf(w, "  %s (id %s, %d partitions)\n", t.Name, t.ID, len(t.Partitions))
		for i, p := range t.Partitions {
			if !p.Exists {
				continue
			}
			fmt.Fprintf(w, "    %d: leader %d, leader epoch %d, partition epoch %d, replicas %v, isr %v", i, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.Isr)
			if len(p.AddingReplicas())+len(p.RemovingReplicas()) > 0 {
				fmt.Fprintf(w, ", adding %v, removing %v", p.AddingReplicas(), p.RemovingReplicas())
			}
			if len(p.EligibleLeaderReplicas())+len(p.LastKnownElr()) > 0 {
				fmt.Fprintf(w, ", elr %v, last known elr %v", p.EligibleLeaderReplicas(), p.LastKnownElr())
			}
			if p.LeaderRecoveryState != 0 {
				fmt.Fprint(w, ", recovering")
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w, "configs:")
	for _, res := range sortedConfigs(im) {
		kv := im.Configs[res]
		for _, k := range slices.Sorted(maps.Keys(kv)) {
			fmt.Fprintf(w, "  %s %q: %s=%s\n", configTypeName(res.ResourceType), res.Name, k, kv[k])
		}
	}
	fmt.Fprintf(w, "producer ids: next %d\n", im.ProducerIDs.NextProducerId)
}

func votersEndpoints(v metadata.VotersRecordVoter) string {
	var eps []string
	for _, e := range v.Endpoints {
		eps = append(eps, fmt.Sprintf("%s://%s:%d", e.Name, e.Host, e.Port))
	}
	return strings.Join(eps, ",")
}

func (v *dirImage) json() any {
	im := v.image
	var brokers, controllers, topics, configs []any
	for _, id := range slices.Sorted(maps.Keys(im.Brokers)) {
		b := im.Brokers[id]
		brokers = append(brokers, metadata.ToJSON(&b))
	}
	for _, id := range slices.Sorted(maps.Keys(im.Controllers)) {
		c := im.Controllers[id]
		controllers = append(controllers, metadata.ToJSON(&c))
	}
	for _, t := range sortedTopics(im) {
		var parts []any
		for i, p := range t.Partitions {
			if !p.Exists {
				continue
			}
			m := metadata.ToJSON(&p).(map[string]any)
			delete(m, "exists")
			m["partitionId"] = i
			// The rarely set fields are behind methods, which ToJSON does
			// not see.
			m["removingReplicas"] = metadata.ToJSON(p.RemovingReplicas())
			m["addingReplicas"] = metadata.ToJSON(p.AddingReplicas())
			m["directories"] = metadata.ToJSON(p.Directories())
			m["eligibleLeaderReplicas"] = metadata.ToJSON(p.EligibleLeaderReplicas())
			m["lastKnownElr"] = metadata.ToJSON(p.LastKnownElr())
			parts = append(parts, m)
		}
		topics = append(topics, map[string]any{"name": t.Name, "topicId": t.ID.String(), "partitions": parts})
	}
	for _, res := range sortedConfigs(im) {
		configs = append(configs, map[string]any{"resourceType": configTypeName(res.ResourceType), "resourceName": res.Name, "configs": im.Configs[res]})
	}
	var voters any
	if v.voters != nil {
		voters = metadata.ToJSON(v.voters)
	}
	return map[string]any{
		"directory": v.dir, "snapshot": v.snapshot, "snapshotRecords": v.snapRecords,
		"logRecords": v.logRecords, "endOffset": v.endOffset, "warnings": v.warnings,
		"kraftVersion": v.kraftVersion, "voters": voters,
		"features": im.Features, "brokers": brokers, "controllers": controllers, "topics": topics,
		"configs": configs, "producerIds": map[string]any{"nextProducerId": im.ProducerIDs.NextProducerId},
	}
}
