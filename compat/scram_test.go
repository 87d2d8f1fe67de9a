package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kraftd/kraftd/metadata"
)

// Three kraftd controllers over SASL_SSL with SCRAM-SHA-512, credentials
// from `kraftd format --add-scram`: they authenticate each other's first
// votes from the bootstrap records, elect a leader, and kafka-metadata-quorum
// (4.1.2, 4.4.0) describes them with SCRAM. An Apache 4.1.2 and a 4.4.0
// broker reach them over SASL_SSL with SCRAM-SHA-512, register, heartbeat
// and serve a producer and a consumer. Then all three controllers are
// killed and restarted at once and elect a leader again, which Apache's
// controllers cannot do over SCRAM (their credentials come only from the
// committed image, empty until a leader is known); the brokers stay
// unfenced and traffic goes on, nothing acknowledged lost. A wrong
// password is refused.
func TestKraftdQuorumOverSASLSSLScram(t *testing.T) {
	t.Parallel()
	s := NewScramSASL(t)
	props := s.ServerProps()
	// Sessions last 10 s (KIP-368): the controllers' peer clients and the
	// brokers re-authenticate in place to keep their connections.
	props["connections.max.reauth.ms"] = "10000"
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Kinds: []string{KindKraftd, KindKraftd, KindKraftd},
		Props: props, KraftdProps: s.PKI.KraftdProps(), FormatArgs: s.FormatArgs()})
	s.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)
	first := WaitMixedLeader(t, members, VotersCaughtUp(1))
	t.Logf("leader %d, epoch %d, high watermark %d", first.LeaderID, first.LeaderEpoch, first.HighWatermark)

	ReserveJVMs(t, 1)
	clientProps := s.WriteClientProperties(t, "admin", s.AdminPassword)
	for _, v := range Versions {
		status, err := MetadataQuorum(t, v, "--bootstrap-controller", members[0].Addr(), "--command-config", clientProps, "describe", "--status")
		if err != nil {
			t.Fatal(err)
		}
		if got := statusLines(status); got["ClusterId"] != clusterID {
			t.Errorf("%s: ClusterId %q, want %q:\n%s", v, got["ClusterId"], clusterID, status)
		}
	}

	brokers, traffic := startScramBrokers(t, s, members, clusterID)
	before := WaitMixedLeader(t, members, nil)
	for _, m := range members {
		m.Kill()
	}
	for _, m := range members {
		m.Start(t)
	}
	again := WaitMixedLeader(t, members, func(st *QuorumStatus) error {
		if st.LeaderEpoch <= before.LeaderEpoch {
			return errorf("epoch %d, not past %d", st.LeaderEpoch, before.LeaderEpoch)
		}
		return VotersCaughtUp(before.HighWatermark + 1)(st)
	})
	t.Logf("after all three were killed and restarted: leader %d, epoch %d, high watermark %d", again.LeaderID, again.LeaderEpoch, again.HighWatermark)
	brokers.WaitUnfenced(t, brokers.IDs()...)
	traffic.WaitProgress("after every controller was killed and restarted", traffic.Mark(), 100)
	t.Logf("%d acknowledged records read back through brokers 4.1.2 and 4.4.0", traffic.StopAndVerify())

	checkReauthenticated(t, members, "User:controller", "User:broker")

	UseSASL(t, members[0].Addr(), scram.Auth{User: "admin", Pass: "not-the-password"}.AsSha512Mechanism())
	if _, err := Dial(context.Background(), members[0].Addr()); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("a wrong SCRAM password: %v", err)
	}
	for _, m := range members {
		out := m.Proc().Output()
		if strings.Contains(out, s.ControllerPassword) || strings.Contains(out, s.AdminPassword) {
			t.Errorf("%s logged a password", m)
		}
	}
}

// checkReauthenticated waits until each principal has re-authenticated
// (KIP-368) in place on some kraftd member's listener: the sessions last
// 10 s, and a connection made anew (after a controller restart) first
// re-authenticates 8.5-9.5 s after its login, so this waits up to a minute.
// Connections closed because their session ended first are counted in the
// log, not failed on: a client re-authenticates at 85-95% of the lifetime
// from its own end of the exchange, so on a loaded machine one can be
// late, as with Apache.
func checkReauthenticated(t *testing.T, members []*MixedMember, principals ...string) {
	t.Helper()
	counts := func() (map[string]int, string) {
		var all strings.Builder
		for _, m := range members {
			all.WriteString(m.Proc().Output())
		}
		out := all.String()
		n := map[string]int{}
		for _, p := range principals {
			re := regexp.MustCompile(`"principal":"` + p + `","session_lifetime_ms":10000,"time":"[^"]*","message":"SASL re-authentication succeeded"`)
			n[p] = len(re.FindAllString(out, -1))
		}
		return n, out
	}
	deadline := time.Now().Add(time.Minute)
	for {
		n, out := counts()
		missing := slices.DeleteFunc(slices.Clone(principals), func(p string) bool { return n[p] > 0 })
		if len(missing) == 0 || time.Now().After(deadline) {
			for _, p := range missing {
				t.Errorf("%s never re-authenticated with kraftd", p)
			}
			for _, p := range principals {
				t.Logf("%s re-authenticated %d times", p, n[p])
			}
			t.Logf("%d connections closed at the end of their session", strings.Count(out, "SASL session ended without re-authentication"))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// startScramBrokers starts an Apache 4.1.2 broker (101) and a 4.4.0 broker
// (102) whose controller listener is SASL_SSL with SCRAM-SHA-512; they
// register, are unfenced (so they heartbeat), and serve a producer and a
// consumer on a topic replicated to both.
func startScramBrokers(t *testing.T, s *ScramSASL, members []*MixedMember, clusterID string) (*BrokerSet, *Traffic) {
	t.Helper()
	ReserveJVMs(t, 2)
	var voters []string
	for _, m := range members {
		voters = append(voters, fmt.Sprintf("%d@%s", m.ID, m.Addr()))
	}
	set := &BrokerSet{Version: Versions[0]}
	for i, v := range Versions {
		b := NewApacheBroker(t, v, 101+i, strings.Join(voters, ","), s.BrokerProps())
		b.Format(t, clusterID)
		set.Brokers = append(set.Brokers, b)
	}
	for _, b := range set.Brokers {
		b.Start(t)
	}
	set.WaitUnfenced(t, set.IDs()...)
	authenticated := false
	for _, m := range members {
		out := m.Proc().Output()
		authenticated = authenticated || strings.Contains(out, `"mechanism":"SCRAM-SHA-512","principal":"User:broker"`)
	}
	if !authenticated {
		t.Error("no controller logged a broker's SCRAM-SHA-512 authentication")
	}
	topicsTool(t, Versions[0], set, "--create", "--topic", trafficTopic, "--partitions", "2", "--replication-factor", "2")
	set.WaitPartitions(t, "traffic topic ready", trafficTopic, fullIsr(set.IDs()))
	traffic := StartTraffic(t, set.Addrs(), trafficTopic, 2)
	traffic.WaitProgress("start", traffic.Mark(), 100)
	return set, traffic
}

// kafka-storage format --add-scram and kraftd format --add-scram, given the
// same salt, iterations and password (or salted password), write the same
// UserScramCredentialRecords after the feature levels: 4.1.2 into
// bootstrap.checkpoint (as kraftd does), 4.4.0 into the bootstrap snapshot.
func TestFormatAddScramMatchesApache(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, v string) {
		ReserveJVMs(t, 1)
		args := []string{
			"--add-scram", `SCRAM-SHA-512=[name=admin,iterations=8192,salt="c2FsdC1vbmU=",password=admin-secret]`,
			"--add-scram", `SCRAM-SHA-256=[name="alice",salt="c2FsdC10d28",saltedpassword="YWxpY2Utc2FsdGVkLXBhc3N3b3Jk"]`,
		}
		members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: v, Kinds: []string{KindApache, KindKraftd}, FormatArgs: args})
		apache := bootstrapScramRecords(t, members[0].Dir, writesBootstrapCheckpoint[v])
		kraftd := bootstrapScramRecords(t, members[1].Dir, true)
		if len(apache) != 2 {
			t.Fatalf("Apache %s wrote %d SCRAM records, want 2", v, len(apache))
		}
		if len(kraftd) != len(apache) {
			t.Fatalf("kraftd wrote %d SCRAM records, Apache %d", len(kraftd), len(apache))
		}
		for i := range apache {
			a, k := apache[i], kraftd[i]
			if a.Name != k.Name || a.Mechanism != k.Mechanism || a.Iterations != k.Iterations ||
				!bytes.Equal(a.Salt, k.Salt) || !bytes.Equal(a.StoredKey, k.StoredKey) || !bytes.Equal(a.ServerKey, k.ServerKey) {
				t.Errorf("record %d: Apache %s %s, kraftd %s", i, v, describeScram(a), describeScram(k))
			}
		}
		t.Logf("Apache %s and kraftd agree: %s; %s", v, describeScram(apache[0]), describeScram(apache[1]))
	})
}

// bootstrapScramRecords reads the UserScramCredentialRecords of a
// formatted metadata directory's bootstrap.checkpoint or, for Apache 4.4's
// layout, its bootstrap snapshot, checking that they follow every feature
// level.
func bootstrapScramRecords(t *testing.T, dir string, checkpoint bool) []*metadata.UserScramCredentialRecord {
	t.Helper()
	path := filepath.Join(dir, "bootstrap.checkpoint")
	if !checkpoint {
		path = filepath.Join(dir, "__cluster_metadata-0", "00000000000000000000-0000000000.checkpoint")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := metadata.DecodeSnapshotFile(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []*metadata.UserScramCredentialRecord
	for i, r := range f.Records {
		s, ok := r.(*metadata.UserScramCredentialRecord)
		switch {
		case ok:
			out = append(out, s)
		case len(out) > 0:
			t.Errorf("%s: record %d (%T) follows the SCRAM credentials", path, i, r)
		}
	}
	return out
}

func describeScram(r *metadata.UserScramCredentialRecord) string {
	return fmt.Sprintf("%s mechanism %d iterations %d salt %x stored key %.4x… server key %.4x…",
		r.Name, r.Mechanism, r.Iterations, r.Salt, r.StoredKey, r.ServerKey)
}

// One kraftd and two Apache controllers, every one formatted with
// --add-scram by its own tool, on a SASL_SSL listener that enables PLAIN
// and SCRAM-SHA-512: the controllers authenticate each other with PLAIN
// (Apache's cannot do it with SCRAM before their image holds the
// credentials), the harness and kafka-metadata-quorum with SCRAM against
// every member, so each Apache controller serves the credentials a kraftd
// or Apache leader wrote from the bootstrap records, and kraftd those an
// Apache leader wrote. Leadership passes both ways.
func TestMixedQuorumOverSASLSSLScram(t *testing.T) {
	t.Parallel()
	forVersions(t, func(t *testing.T, version string) {
		ReserveJVMs(t, 3)
		s := NewScramSASL(t)
		s.Plain = true
		props := s.ServerProps()
		props["connections.max.reauth.ms"] = "10000"
		members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Version: version, Kinds: []string{KindKraftd, KindApache, KindApache},
			Props: props, KraftdProps: s.PKI.KraftdProps(), FormatArgs: s.FormatArgs()})
		s.UseFor(t, MixedAddrs(members...)...)
		StartMixed(t, members...)
		passLeadershipBothWays(t, members, "SASL_SSL")
		clientProps := s.WriteClientProperties(t, "admin", s.AdminPassword)
		for _, m := range members {
			status, err := MetadataQuorum(t, version, "--bootstrap-controller", m.Addr(), "--command-config", clientProps, "describe", "--status")
			if err != nil {
				t.Fatalf("kafka-metadata-quorum with SCRAM against %s: %v", m, err)
			}
			if got := statusLines(status); got["ClusterId"] != clusterID {
				t.Errorf("%s: ClusterId %q, want %q", m, got["ClusterId"], clusterID)
			}
		}
		// Sessions of 10 s both ways: the Apache controllers re-authenticate
		// with kraftd, and kraftd's peer client with them, in place.
		checkReauthenticated(t, members, "User:controller")
		// kraftd may have been restarted (killed to pass leadership on)
		// less than a session ago: its first re-authentication can still
		// be on its way.
		var out string
		Eventually(t, time.Minute, "kraftd re-authenticates with an Apache controller", members[0].Proc(), func() error {
			if out = members[0].Proc().Output(); !strings.Contains(out, "re-authenticated with peer") {
				return errors.New("no re-authentication in its log yet")
			}
			return nil
		})
		t.Logf("kraftd re-authenticated with its Apache peers %d times", strings.Count(out, "re-authenticated with peer"))
		if strings.Contains(out, "SASL authentication with peer failed") {
			t.Error("kraftd failed to authenticate with a peer")
		}
	})
}
