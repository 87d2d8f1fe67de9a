package compat

import (
	"crypto/tls"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kraftd/kraftd/internal/testpki"
)

// Three kraftd controllers over SSL with mutual TLS elect a leader and
// commit; after the leader is killed another is elected and commits on;
// Apache's kafka-metadata-quorum describes the quorum over SSL with a
// client certificate; a plaintext client is refused.
func TestKraftdQuorumOverMutualTLS(t *testing.T) {
	t.Parallel()
	k := NewTestPKI(t)
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Kinds: []string{KindKraftd, KindKraftd, KindKraftd},
		Props: k.ServerProps("required"), KraftdProps: k.KraftdProps()})
	k.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)

	first := WaitMixedLeader(t, members, VotersCaughtUp(1))
	leader := MemberByID(members, first.LeaderID)
	t.Logf("leader %s, epoch %d, high watermark %d", leader, first.LeaderEpoch, first.HighWatermark)
	leader.Kill()
	up := Without(members, leader)
	next := WaitMixedLeader(t, up, func(s *QuorumStatus) error {
		if s.LeaderEpoch <= first.LeaderEpoch || s.HighWatermark <= first.HighWatermark {
			return errorf("leader %d epoch %d high watermark %d: not past epoch %d, %d", s.LeaderID, s.LeaderEpoch, s.HighWatermark, first.LeaderEpoch, first.HighWatermark)
		}
		return nil
	})
	t.Logf("after SIGKILL: leader node %d, epoch %d, high watermark %d", next.LeaderID, next.LeaderEpoch, next.HighWatermark)
	leader.Start(t)
	WaitMixedLeader(t, members, VotersCaughtUp(next.HighWatermark))

	// The harness's own client reaches kraftd only with TLS.
	tlsAddrs.Delete(members[0].Addr())
	if _, err := APIVersions(members[0].Addr()); err == nil {
		t.Error("a plaintext ApiVersions was answered on the SSL listener")
	}
	k.UseFor(t, members[0].Addr())
	checkStrangerRefused(t, members[0])

	ReserveJVMs(t, 1)
	clientProps := k.WriteClientProperties(t)
	for _, v := range Versions {
		status, err := MetadataQuorum(t, v, "--bootstrap-controller", members[0].Addr(), "--command-config", clientProps, "describe", "--status")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kafka-metadata-quorum %s describe --status over SSL:\n%s", v, status)
		got := statusLines(status)
		if got["ClusterId"] != clusterID {
			t.Errorf("%s: ClusterId %q, want %q", v, got["ClusterId"], clusterID)
		}
		for _, m := range members {
			if !strings.Contains(got["CurrentVoters"], fmt.Sprintf(`"id": %d`, m.ID)) {
				t.Errorf("%s: CurrentVoters %q lacks %s", v, got["CurrentVoters"], m)
			}
		}
	}
	checkStatusSecured(t, "SSL", members, clusterID, clientProps)
	checkRotatedKeystoreServed(t, k, members)
	for _, m := range members {
		if out := m.Proc().Output(); !strings.Contains(out, "principal") || !strings.Contains(out, "User:CN=controller,O=kraftd compat") {
			t.Errorf("%s never logged a peer's principal", m)
		}
	}
}

// One kraftd and two Apache controllers over SSL with mutual TLS:
// leadership passes from one implementation to the other and back.
func TestMixedQuorumOverMutualTLS(t *testing.T) {
	t.Parallel()
	forVersions(t, runMixedOverTLS)
}

func runMixedOverTLS(t *testing.T, version string) {
	ReserveJVMs(t, 2)
	k := NewTestPKI(t)
	members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: version, Kinds: []string{KindKraftd, KindApache, KindApache},
		Props: k.ServerProps("required"), KraftdProps: k.KraftdProps()})
	k.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)

	cur := WaitMixedLeader(t, members, VotersCaughtUp(1))
	led := map[string]int{}
	leader := MemberByID(members, cur.LeaderID)
	led[leader.Kind]++
	t.Logf("first leader %s, epoch %d", leader, cur.LeaderEpoch)
	for round := 1; led[KindKraftd] == 0 || led[KindApache] == 0 || round <= 2; round++ {
		if round > maxFailovers {
			t.Fatalf("after %d rounds kraftd led %d times, Apache %d", maxFailovers, led[KindKraftd], led[KindApache])
		}
		want := KindKraftd
		if leader.Kind == KindKraftd {
			want = KindApache
		}
		cur = steerAndKill(t, members, leader, want, cur)
		next := MemberByID(members, cur.LeaderID)
		led[next.Kind]++
		t.Logf("round %d: killed %s; %s leads epoch %d", round, leader, next, cur.LeaderEpoch)
		leader.Start(t)
		cur = WaitMixedLeader(t, members, VotersCaughtUp(cur.HighWatermark))
		leader = MemberByID(members, cur.LeaderID)
	}
	// kraftd registers its controller listener as SSL, as Apache's
	// controllers replay it.
	kraftdSSL := regexp.MustCompile(`ControllerRegistration\(id=1, [^\n]*listeners=\[Endpoint\(listenerName='CONTROLLER', securityProtocol=SSL`)
	for _, m := range members[1:] {
		if !kraftdSSL.MatchString(m.Proc().Output()) {
			t.Errorf("%s never replayed kraftd's registration with an SSL listener", m)
		}
	}
}

// checkRotatedKeystoreServed replaces the controllers' keystore file with a
// renewed certificate (same subject) and checks that the next connection
// is served it, that kraftd logs so, and that the quorum still commits.
func checkRotatedKeystoreServed(t *testing.T, k *TestPKI, members []*MixedMember) {
	t.Helper()
	renewed, err := k.CA.Issue(testpki.Options{Subject: k.Controller.Cert.Subject})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WriteControllerKeystore(renewed); err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", members[0].Addr(), k.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	served := c.ConnectionState().PeerCertificates[0]
	c.Close()
	if served.SerialNumber.Cmp(renewed.Cert.SerialNumber) != 0 {
		t.Fatalf("after rotation %s serves serial %x, want %x", members[0], served.SerialNumber, renewed.Cert.SerialNumber)
	}
	Eventually(t, ReadyTimeout, "the rotation logged", nil, func() error {
		if out := members[0].Proc().Output(); !strings.Contains(out, "now serving certificate") || !strings.Contains(out, renewed.Cert.SerialNumber.Text(16)) {
			return errorf("%s has not logged the renewed certificate", members[0])
		}
		return nil
	})
	s := WaitMixedLeader(t, members, nil)
	WaitMixedLeader(t, members, VotersCaughtUp(s.HighWatermark+1))
}

// checkStrangerRefused: a client certificate from another CA is refused by
// the handshake, and kraftd logs the peer and why, as it logged the
// plaintext client before.
func checkStrangerRefused(t *testing.T, m *MixedMember) {
	t.Helper()
	stranger := NewTestPKI(t)
	cfg := stranger.ClientConfig()
	cfg.RootCAs = nil
	cfg.InsecureSkipVerify = true // the stranger trusts anyone; kraftd must not
	cert := cfg.Certificates[0]
	cfg.Certificates = nil
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	c, err := tls.Dial("tcp", m.Addr(), cfg)
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1)) // TLS 1.3 reports the refusal on the first read
		c.Close()
	}
	if err == nil {
		t.Fatal("a client certificate from another CA was accepted")
	}
	Eventually(t, ReadyTimeout, "refusals logged", nil, func() error {
		out := m.Proc().Output()
		if !strings.Contains(out, "not signed by a CA of the truststore") || !strings.Contains(out, "sent plaintext") {
			return errorf("%s has not logged both refusals", m)
		}
		return nil
	})
}
