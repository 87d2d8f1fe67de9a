// Package loopback hands out free TCP ports on 127.0.0.1 for processes
// that a Go program starts and that bind those ports themselves (kraftd
// and Apache Kafka nodes of a test or of the cluster kit). It owns only
// the choice of port numbers; it never binds a port for longer than the
// check that it is free.
//
// Asking the kernel for port 0 gives a port from the ephemeral range, the
// same range the kernel takes the local port of every outgoing connection
// from. Between the check and the child's bind, one of the many client
// connections a test makes can take that port, and the child then fails
// with "Address already in use". Ports below the ephemeral range are
// never given to outgoing connections, so this package picks there,
// scanning from a random place so that two programs choosing at once
// rarely meet.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowestPort is the bottom of the range ports are picked from: above the
// ports well-known services listen on.
const lowestPort = 10000

var chooser struct {
	sync.Mutex
	next  int          // the port the next scan starts at; 0 before the first
	given map[int]bool // ports this process has handed out already
}

// FreePorts returns n distinct ports on 127.0.0.1 that were free when
// chosen and that this process has not handed out before. Every listener
// opened to check them is held until all n are chosen.
func FreePorts(n int) ([]int, error) {
	low, high := candidateRange()
	chooser.Lock()
	defer chooser.Unlock()
	if chooser.given == nil {
		chooser.given = map[int]bool{}
		chooser.next = low + rand.IntN(high-low)
	}
	ports := make([]int, 0, n)
	for tried := 0; len(ports) < n; tried++ {
		if tried > high-low {
			return nil, fmt.Errorf("loopback: no %d free ports in %d-%d", n, low, high-1)
		}
		p := chooser.next
		chooser.next++
		if chooser.next >= high {
			chooser.next = low
		}
		if chooser.given[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken by another program
		}
		defer l.Close()
		chooser.given[p] = true
		ports = append(ports, p)
	}
	return ports, nil
}

// candidateRange is [lowestPort, the bottom of the kernel's ephemeral
// range). Where that range cannot be read, Linux's default (32768) is
// assumed.
func candidateRange() (low, high int) {
	high = 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > lowestPort+1000 {
				high = v
			}
		}
	}
	return lowestPort, high
}
