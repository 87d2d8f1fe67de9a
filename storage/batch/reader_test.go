package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// threeBatches is a small valid input: batches at offsets 0, 2 and 3.
func threeBatches() []byte {
	var raw []byte
	raw = Builder{BaseOffset: 0, LeaderEpoch: 1}.Encode(raw, []Record{{Value: []byte("a")}, {Value: []byte("b")}})
	raw = Builder{BaseOffset: 2, LeaderEpoch: 1, Control: true}.Encode(raw, []Record{{Key: []byte{0, 0, 0, 2}}})
	raw = Builder{BaseOffset: 3, LeaderEpoch: 2}.Encode(raw, []Record{{Value: bytes.Repeat([]byte("c"), 700)}})
	return raw
}

// readers returns a Reader of each kind over data.
func readers(data []byte, maxSize int) map[string]*Reader {
	return map[string]*Reader{
		"slice":  NewSliceReader(data, maxSize),
		"at":     NewReaderAt(bytes.NewReader(data), 0, int64(len(data)), maxSize),
		"stream": NewReader(iotest.HalfReader(bytes.NewReader(data)), maxSize),
	}
}

func TestReaderWholeInput(t *testing.T) {
	raw := threeBatches()
	for name, r := range readers(raw, 0) {
		var bases []int64
		for {
			h, b, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if _, err := Check(b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bases = append(bases, h.BaseOffset)
		}
		if len(bases) != 3 || bases[2] != 3 || r.Pos() != int64(len(raw)) {
			t.Fatalf("%s: bases %v pos %d", name, bases, r.Pos())
		}
		if _, _, err := r.Next(); err != io.EOF {
			t.Fatalf("%s: after the end: %v", name, err)
		}
	}
}

func TestReaderTornTail(t *testing.T) {
	raw := threeBatches()
	first, _ := ReadHeader(raw)
	for _, cut := range []int{len(raw) - 1, first.Size() + 5, first.Size() + 30} {
		for name, r := range readers(raw[:cut], 0) {
			if _, _, err := r.Next(); err != nil {
				t.Fatalf("%s cut %d: first batch: %v", name, cut, err)
			}
			var err error
			for err == nil {
				_, _, err = r.Next()
			}
			if !errors.Is(err, ErrShort) {
				t.Fatalf("%s cut %d: %v, want ErrShort", name, cut, err)
			}
			if r.Pos() < int64(first.Size()) || r.Pos() >= int64(cut) {
				t.Fatalf("%s cut %d: stopped at %d", name, cut, r.Pos())
			}
			if _, _, again := r.Next(); again != err {
				t.Fatalf("%s: error not sticky: %v then %v", name, err, again)
			}
		}
	}
}

func TestReaderBadLengths(t *testing.T) {
	raw := threeBatches()
	for _, tc := range []struct {
		length  int32
		maxSize int
		want    error
	}{
		{0, 0, ErrCorrupt},
		{-1, 0, ErrCorrupt},
		{HeaderSize - LogOverhead - 1, 0, ErrCorrupt},
		{1 << 30, 0, ErrShort},
		{1 << 30, 1 << 20, ErrTooLarge},
	} {
		b := bytes.Clone(raw)
		binary.BigEndian.PutUint32(b[offLength:], uint32(tc.length))
		for name, r := range readers(b, tc.maxSize) {
			if _, _, err := r.Next(); !errors.Is(err, tc.want) || r.Pos() != 0 {
				t.Errorf("%s length %d: %v at %d, want %v", name, tc.length, err, r.Pos(), tc.want)
			}
		}
	}
	// A stream with a huge length field and few bytes must not allocate
	// for the length.
	b := bytes.Clone(raw[:100])
	binary.BigEndian.PutUint32(b[offLength:], 1<<31-1)
	r := NewReader(bytes.NewReader(b), 0)
	if _, _, err := r.Next(); !errors.Is(err, ErrShort) || cap(r.buf) > 1024 {
		t.Fatalf("%v, buffer %d bytes", err, cap(r.buf))
	}
}

func TestReaderHeaders(t *testing.T) {
	raw := threeBatches()
	for name, r := range readers(raw, 0) {
		n := 0
		for {
			h, err := r.NextHeader()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n++
			if h.BaseOffset == 3 && h.Size() < 700 {
				t.Fatalf("%s: header %+v", name, h)
			}
		}
		if n != 3 || r.Pos() != int64(len(raw)) {
			t.Fatalf("%s: %d headers, pos %d", name, n, r.Pos())
		}
	}
	// A region stops at its end even when the source goes on.
	r := NewReaderAt(bytes.NewReader(append(raw, make([]byte, 4096)...)), 0, int64(len(raw)), 0)
	for range 3 {
		if _, err := r.NextHeader(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.NextHeader(); err != io.EOF {
		t.Fatalf("past the region: %v", err)
	}
}

func TestReaderSourceError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(iotest.ErrReader(boom), 0)
	if _, _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("%v", err)
	}
}
