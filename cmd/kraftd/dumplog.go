package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/storage/batch"
)

func dumpLogCommand() *cli.Command {
	return &cli.Command{
		Name:      "dump-log",
		Usage:     "print every batch and record of a metadata log segment, snapshot or bootstrap.checkpoint",
		ArgsUsage: "FILE...",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per batch and per record"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.Exit("dump-log: name at least one file", 2)
			}
			for _, path := range c.Args().Slice() {
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if err := dumpBatches(os.Stdout, path, raw, c.Bool("json")); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			return nil
		},
	}
}

// dumpBatches prints each batch and its decoded records. It stops with an
// error at a corrupt batch, and reports a partial batch at the end (a torn
// tail) without failing, as kafka-dump-log does.
func dumpBatches(w io.Writer, path string, raw []byte, asJSON bool) error {
	if !asJSON {
		fmt.Fprintf(w, "Dumping %s\n", path)
	}
	position := 0
	var scan batch.Scanner // one record at a time, however many a batch packs
	for position < len(raw) {
		h, err := scan.Scan(raw[position:], nil) // check the batch whole first
		b := batch.Batch{Header: h}
		if errors.Is(err, batch.ErrShort) {
			fmt.Fprintf(w, "Found %d trailing bytes of a partial batch at position %d\n", len(raw)-position, position)
			return nil
		}
		if err != nil {
			return fmt.Errorf("position %d: %w", position, err)
		}
		if asJSON {
			writeJSON(w, batchJSON(b, position))
		} else {
			fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %v isControl: %v position: %d CreateTime: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: true\n",
				b.BaseOffset, b.LastOffset(), b.RecordCount, b.BaseSequence, b.ProducerID, b.ProducerEpoch, b.PartitionLeaderEpoch,
				b.Attributes&batch.AttrTransactional != 0, b.IsControl(), position, b.MaxTimestamp, b.Size(), b.Magic, b.Codec(), b.CRC)
		}
		if _, err := scan.Scan(raw[position:], func(r batch.Record) error {
			dumpRecord(w, h, r, asJSON)
			return nil
		}); err != nil {
			return fmt.Errorf("position %d: %w", position, err)
		}
		position += b.Size()
	}
	return nil
}

// dumpRecord prints one record of the batch h.
func dumpRecord(w io.Writer, h batch.Header, r batch.Record, asJSON bool) {
	kind, payload := decodeRecord(h.IsControl(), r)
	offset := h.BaseOffset + int64(r.OffsetDelta)
	if asJSON {
		writeJSON(w, map[string]any{"offset": offset, "control": h.IsControl(), "type": kind, "record": payload})
		return
	}
	text, _ := json.Marshal(payload)
	fmt.Fprintf(w, "| offset: %d CreateTime: %d keySize: %d valueSize: %d %s: %s\n",
		offset, h.BaseTimestamp+r.TimestampDelta, lenOrNull(r.Key), lenOrNull(r.Value), kind, text)
}

func lenOrNull(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// decodeRecord names a record's type and returns its fields for printing;
// an undecodable record is shown with its error rather than stopping the dump.
func decodeRecord(control bool, r batch.Record) (string, any) {
	if control {
		v, err := metadata.DecodeControl(r.Key, r.Value)
		if err != nil {
			return "UnknownControl", map[string]string{"error": err.Error()}
		}
		return fmt.Sprintf("%T", v)[len("*metadata."):], metadata.ToJSON(v)
	}
	rec, err := metadata.DecodeValue(r.Value)
	if err != nil {
		return "Undecodable", map[string]string{"error": err.Error()}
	}
	return metadata.RecordName(rec.Key()), metadata.ToJSON(rec)
}

func batchJSON(b batch.Batch, position int) map[string]any {
	return map[string]any{
		"baseOffset": b.BaseOffset, "lastOffset": b.LastOffset(), "count": b.RecordCount,
		"partitionLeaderEpoch": b.PartitionLeaderEpoch, "isControl": b.IsControl(), "position": position,
		"createTime": b.MaxTimestamp, "size": b.Size(), "crc": b.CRC,
	}
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}
