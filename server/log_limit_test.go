package server

import (
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// floodConns is how many bad connections each flood opens.
const floodConns = 5000

// TestSecurityLogFloodIsBounded opens 5,000 bad connections of each kind
// a stranger can open at will (plaintext to a TLS listener, a TLS
// handshake abandoned, a failed login, with and without the bound on
// failures refusing them): the log gets a bounded number of lines for
// them, and a later line counts the ones it suppressed, so that every
// connection is accounted for.
func TestSecurityLogFloodIsBounded(t *testing.T) {
	k := newPKI(t)
	floods := []struct {
		name  string
		props map[string]string
		bad   func(addr string) error
	}{
		{"plaintext to TLS", sslProps(t, k, nil), func(addr string) error {
			return badConn(addr, []byte("GET /metrics HTTP/1.1\r\n\r\n"))
		}},
		{"TLS handshake cut short", sslProps(t, k, nil), func(addr string) error {
			// A ClientHello record header announcing bytes that never come.
			return badConn(addr, []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
		}},
		{"failed logins", saslProps(t, map[string]string{"connection.failed.authentication.delay.ms": "0",
			"kraftd.sasl.max.failed.authentications.per.address": "0", "kraftd.sasl.max.failed.authentications.per.principal": "0"}),
			failedLogin},
		{"failed logins over the bound", saslProps(t, map[string]string{"connection.failed.authentication.delay.ms": "0"}), failedLogin},
	}
	for _, f := range floods {
		t.Run(f.name, func(t *testing.T) {
			s, addr, _, logs := startTLSServer(t, f.props)
			began := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, floodConns)
			work := make(chan struct{})
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						if err := f.bad(addr); err != nil {
							errs <- err
						}
					}
				}()
			}
			for range floodConns {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			flooded := time.Since(began)
			// Every connection is either a line or counted in a summary,
			// once the last window has ended.
			deadline := time.Now().Add(3 * time.Minute)
			for {
				lines, suppressed := countSecurityLines(t, logs.String())
				if lines+suppressed >= floodConns {
					// 20 lines of a kind per 10 s window (log_limit.go), two
					// kinds at most, plus a summary per window.
					windows := int(time.Since(began)/(10*time.Second)) + 2
					if bound := 2 * 21 * windows; lines > bound {
						t.Fatalf("%d log lines for %d bad connections in %v (bound %d)", lines, floodConns, flooded, bound)
					}
					if lines+suppressed != floodConns {
						t.Fatalf("%d lines and %d suppressed for %d bad connections", lines, suppressed, floodConns)
					}
					t.Logf("%d bad connections in %v: %d lines written, %d suppressed and counted", floodConns, flooded.Round(time.Millisecond), lines, suppressed)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("only %d lines and %d suppressed for %d bad connections:\n%s", lines, suppressed, floodConns, tail(logs.String()))
				}
				time.Sleep(100 * time.Millisecond)
			}
			s.Close()
		})
	}
}

// badConn connects, sends b, ends its side, and waits for the server to
// close.
func badConn(addr string, b []byte) error {
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write(b); err != nil {
		return nil // closed already
	}
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
	return nil
}

// failedLogin authenticates with a wrong password and reads the answer.
func failedLogin(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
	var out []byte
	for i, req := range []kmsg.Request{hs, auth} {
		out = protocol.AppendFrame(out, req.AppendTo(protocol.AppendRequestHeader(nil, req, int32(i), "flood")))
	}
	if _, err := c.Write(out); err != nil {
		return err
	}
	io.Copy(io.Discard, c)
	return nil
}

// countSecurityLines counts the log lines about bad connections, and the
// lines the summaries say were suppressed.
func countSecurityLines(t *testing.T, log string) (lines, suppressed int) {
	for _, l := range strings.Split(log, "\n") {
		if l == "" {
			continue
		}
		var e struct {
			Message    string `json:"message"`
			Suppressed int    `json:"suppressed"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch {
		case strings.HasPrefix(e.Message, "suppressed "):
			suppressed += e.Suppressed
		case strings.Contains(e.Message, "closing connection"):
			lines++
		}
	}
	return lines, suppressed
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
