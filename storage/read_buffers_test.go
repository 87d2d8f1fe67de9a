package storage

import "testing"

// Read's buffers come in the pools' sizes, and only those go back:
// RecycleRead leaves any other buffer to the collector.
func TestReadBufferClasses(t *testing.T) {
	for _, tc := range []struct{ n, class, capacity int }{
		{1, 0, 4 << 10}, {4 << 10, 0, 4 << 10}, {4<<10 + 1, 1, 8 << 10},
		{100 << 10, 5, 128 << 10}, {1 << 20, 8, 1 << 20},
	} {
		if got := readClass(tc.n); got != tc.class {
			t.Errorf("readClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		b := takeReadBuffer(tc.n)
		if len(b) != tc.n || cap(b) != tc.capacity {
			t.Errorf("takeReadBuffer(%d): len %d cap %d, want cap %d", tc.n, len(b), cap(b), tc.capacity)
		}
		RecycleRead(b)
	}
	if b := takeReadBuffer(1<<20 + 1); cap(b) != 1<<20+1 {
		t.Errorf("a read above the largest pool got cap %d", cap(b))
	}
	// A buffer of another size is not pooled: a later take of its class
	// never returns it.
	odd := make([]byte, 0, 5000)
	RecycleRead(odd)
	for range 100 {
		if b := takeReadBuffer(5000); cap(b) != 8<<10 {
			t.Fatalf("take of 5000 bytes returned cap %d", cap(b))
		}
	}
}

// A recycled buffer is handed out again for a later read (the point of
// the pools), its capacity intact.
func TestReadRecycledBufferIsReused(t *testing.T) {
	first := takeReadBuffer(10 << 10)
	first[0] = 7
	RecycleRead(first)
	// sync.Pool may drop what it holds at any time, so a miss is allowed;
	// what comes back must have the class's capacity.
	again := takeReadBuffer(9 << 10)
	if cap(again) != 16<<10 || len(again) != 9<<10 {
		t.Fatalf("len %d cap %d, want 9 KiB in 16 KiB", len(again), cap(again))
	}
}
