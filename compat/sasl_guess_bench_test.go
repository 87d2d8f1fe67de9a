package compat

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/protocol"
)

// BenchmarkSASLGuessRate measures how fast a stranger can guess the
// admin's password over SASL_PLAINTEXT with PLAIN, from one client and
// from 50 in parallel (all from 127.0.0.1), against a lone kraftd
// controller with its defaults, one with the bounds on failures turned off
// (the failed-login delay alone), and a lone Apache 4.4.0 controller (512
// MiB heap), in the same run. Each measure lasts KRAFTD_GUESS_SECONDS
// (default 20). A guess is an attempt whose password was checked (the
// answer says invalid credentials); an attempt the bounds refused before
// checking is counted apart. KRAFTD_GUESS_SIDES picks sides
// (kraftd,kraftd-unbounded,apache); an older kraftd, which has no bounds,
// runs as "kraftd".
func BenchmarkSASLGuessRate(b *testing.B) {
	seconds := 20
	if v := os.Getenv("KRAFTD_GUESS_SECONDS"); v != "" {
		fmt.Sscan(v, &seconds)
	}
	sides := []string{"kraftd", "kraftd-unbounded", "apache"}
	if v := os.Getenv("KRAFTD_GUESS_SIDES"); v != "" {
		sides = strings.Split(v, ",")
	}
	s := NewPlainSASL()
	for range b.N {
		for _, side := range sides {
			b.Run(side, func(b *testing.B) {
				props := s.ServerProps()
				kind := KindKraftd
				opts := MixedOptions{Version: "4.4.0", Kinds: []string{kind}, Props: props}
				switch side {
				case "kraftd-unbounded":
					opts.KraftdProps = map[string]string{
						"kraftd.sasl.max.failed.authentications.per.address":   "0",
						"kraftd.sasl.max.failed.authentications.per.principal": "0",
					}
				case "apache":
					opts.Kinds = []string{KindApache}
				}
				members, _ := NewMixedStaticQuorum(b, opts)
				StartMixed(b, members...)
				s.UseFor(b, members[0].Addr())
				WaitLeader(b, MixedAddrs(members...), nil)
				for _, clients := range []int{1, 50} {
					g := guess(b, members[0].Addr(), clients, time.Duration(seconds)*time.Second)
					fmt.Printf("guess-rate side=%s clients=%d seconds=%d guesses=%d guesses_per_s=%.1f refused=%d other=%d\n",
						side, clients, seconds, g.checked, float64(g.checked)/float64(seconds), g.refused, g.other)
				}
			})
		}
	}
}

type guessCounts struct{ checked, refused, other int64 }

// guess runs clients goroutines that each log in as admin with a wrong
// password, on a new connection each time, for d.
func guess(b *testing.B, addr string, clients int, d time.Duration) guessCounts {
	var g guessCounts
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(stop); n++ {
				switch wrongLogin(addr, fmt.Sprintf("guess-%d", n)) {
				case "checked":
					atomic.AddInt64(&g.checked, 1)
				case "refused":
					atomic.AddInt64(&g.refused, 1)
				default:
					atomic.AddInt64(&g.other, 1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return g
}

// wrongLogin tries password once and says how the server answered.
func wrongLogin(addr, password string) string {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	if _, err := roundTrip(c, hs, 1); err != nil {
		return err.Error()
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00admin\x00" + password)
	r, err := roundTrip(c, auth, 2)
	if err != nil {
		return err.Error()
	}
	resp := r.(*kmsg.SASLAuthenticateResponse)
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	switch {
	case resp.ErrorCode == kerr.SaslAuthenticationFailed.Code && strings.Contains(msg, "too many failed"):
		return "refused"
	case resp.ErrorCode == kerr.SaslAuthenticationFailed.Code:
		return "checked"
	}
	return fmt.Sprintf("code %d", resp.ErrorCode)
}

func roundTrip(c net.Conn, req kmsg.Request, corr int32) (kmsg.Response, error) {
	frame := protocol.AppendFrame(nil, req.AppendTo(protocol.AppendRequestHeader(nil, req, corr, "guesser")))
	if _, err := c.Write(frame); err != nil {
		return nil, err
	}
	answer, err := protocol.ReadFrame(c, 1<<20)
	if err != nil {
		return nil, err
	}
	_, resp, err := protocol.ParseResponse(answer, req)
	return resp, err
}
