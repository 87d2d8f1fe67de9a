package loopback

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreDistinctBindableAndBelowTheEphemeralRange(t *testing.T) {
	low, high := candidateRange()
	seen := map[int]bool{}
	for range 3 {
		ports, err := FreePorts(5)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p < low || p >= high {
				t.Errorf("port %d outside %d-%d", p, low, high-1)
			}
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Fatalf("port %d not bindable: %v", p, err)
			}
			l.Close()
		}
	}
}

func TestFreePortsSkipsAPortInUse(t *testing.T) {
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the port the next scan would start at: it must be passed over.
	chooser.Lock()
	next := chooser.next
	chooser.Unlock()
	// (If another program holds it already, it must be passed over all the same.)
	if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(next))); err == nil {
		defer l.Close()
	}
	more, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	if more[0] == next || more[0] == ports[0] {
		t.Errorf("got port %d; %d is in use and %d was handed out", more[0], next, ports[0])
	}
}
