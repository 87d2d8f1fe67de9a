package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to every kind of Reader: none may panic,
// all must yield the same batches and end the same way, whole batches must
// match what ReadHeader finds in the slice, and a stream's buffer must stay
// within twice the input. The seed corpus is testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, maxSize uint16) {
		want := readAll(NewSliceReader(data, int(maxSize)), true)
		for name, r := range readers(data, int(maxSize)) {
			got := readAll(r, true)
			if got != want {
				t.Fatalf("%s:\n%s\nslice:\n%s", name, got, want)
			}
			if r.stream != nil && cap(r.buf) > 2*len(data)+512 {
				t.Fatalf("stream buffer %d bytes for %d bytes of input", cap(r.buf), len(data))
			}
		}
		// Headers alone agree with whole batches wherever the input is good.
		for name, r := range readers(data, int(maxSize)) {
			got := readAll(r, false)
			if name != "stream" && got != want {
				t.Fatalf("%s headers:\n%s\nwhole:\n%s", name, got, want)
			}
		}
		// Each whole batch is one ReadHeader accepts at that position.
		r := NewSliceReader(data, int(maxSize))
		for {
			h, b, err := r.Next()
			if err != nil {
				break
			}
			pos := r.Pos() - int64(h.Size())
			h2, err := ReadHeader(data[pos:])
			if err != nil || h2 != h || !bytes.Equal(b, data[pos:r.Pos()]) {
				t.Fatalf("batch at %d: %+v vs ReadHeader %+v, %v", pos, h, h2, err)
			}
		}
	})
}

// readAll describes every batch a Reader yields and how it ends.
func readAll(r *Reader, whole bool) string {
	var out bytes.Buffer
	for {
		pos := r.Pos()
		var h Header
		var err error
		if whole {
			h, _, err = r.Next()
		} else {
			h, err = r.NextHeader()
		}
		if err != nil {
			fmt.Fprintf(&out, "%s at %d", errKind(err), r.Pos())
			if r.Pos() != pos {
				fmt.Fprintf(&out, " (moved from %d)", pos)
			}
			return out.String()
		}
		fmt.Fprintf(&out, "%d: %+v\n", pos, h)
	}
}

func errKind(err error) string {
	switch {
	case err == io.EOF:
		return "EOF"
	case errors.Is(err, ErrTooLarge):
		return "too large"
	case errors.Is(err, ErrShort):
		return "short"
	case errors.Is(err, ErrCorrupt):
		return "corrupt"
	}
	return "other: " + err.Error()
}
