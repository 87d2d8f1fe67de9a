// Package uuid is Kafka's Uuid: 16 bytes (most significant long first, big
// endian) written as URL-safe base64 without padding, 22 characters.
//
// Kafka reserves some values: (0,0) is the zero/MIGRATING id, (0,1) is the
// metadata topic id and UNASSIGNED directory, (0,2) is the LOST directory;
// directory ids avoid every (0,n) with n < 100. Random ids are version-4
// UUIDs that are none of those and whose text does not start with '-', so
// they cannot be mistaken for a command-line flag.
//
// UUID is kraftd's only Uuid type: metadata.Uuid, the name the generated
// records use, is an alias of it.
package uuid

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
)

// UUID is a Kafka Uuid.
type UUID [16]byte

var (
	// Zero is Uuid.ZERO_UUID (also DirectoryId.MIGRATING).
	Zero = UUID{}
	// MetadataTopicID is the topic id of __cluster_metadata, Uuid.ONE_UUID.
	MetadataTopicID = FromBits(0, 1)
	// Unassigned is DirectoryId.UNASSIGNED.
	Unassigned = FromBits(0, 1)
	// Lost is DirectoryId.LOST.
	Lost = FromBits(0, 2)
)

// FromBits builds a UUID from Java's two longs.
func FromBits(most, least uint64) UUID {
	var u UUID
	binary.BigEndian.PutUint64(u[:8], most)
	binary.BigEndian.PutUint64(u[8:], least)
	return u
}

// Bits returns Java's most and least significant longs.
func (u UUID) Bits() (most, least uint64) {
	return binary.BigEndian.Uint64(u[:8]), binary.BigEndian.Uint64(u[8:])
}

var enc = base64.RawURLEncoding

// String is Kafka's Uuid.toString.
func (u UUID) String() string { return enc.EncodeToString(u[:]) }

// Parse is Kafka's Uuid.fromString: unpadded URL-safe base64 of 16 bytes.
func Parse(s string) (UUID, error) {
	var u UUID
	if len(s) != 22 {
		return u, fmt.Errorf("uuid: %q is not 22 base64 characters", s)
	}
	b, err := enc.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("uuid: %q is not a base64 uuid", s)
	}
	copy(u[:], b)
	return u, nil
}

// IsReservedDirectoryID reports whether u is one of the 100 directory ids
// Kafka reserves (DirectoryId.reserved), which include Zero, Unassigned and Lost.
func (u UUID) IsReservedDirectoryID() bool {
	most, least := u.Bits()
	return most == 0 && least < 100
}

// Random returns a random version-4 UUID that Kafka would generate: never
// reserved (neither a Uuid nor a directory id) and never starting with '-'.
// It reads from crypto/rand when r is nil.
func Random(r io.Reader) (UUID, error) {
	if r == nil {
		r = rand.Reader
	}
	for {
		var u UUID
		if _, err := io.ReadFull(r, u[:]); err != nil {
			return u, fmt.Errorf("uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4, as java.util.UUID.randomUUID
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if !u.IsReservedDirectoryID() && u.String()[0] != '-' {
			return u, nil
		}
	}
}

// MustRandom is Random from crypto/rand, which does not fail on Linux.
func MustRandom() UUID {
	u, err := Random(nil)
	if err != nil {
		panic(err)
	}
	return u
}
