package compat

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Three kraftd controllers over SASL_PLAINTEXT with PLAIN authenticate to
// each other and elect a leader; Apache's kafka-metadata-quorum describes
// the quorum with a SASL client.properties; a wrong password is refused
// and logged.
func TestKraftdQuorumOverSASLPlain(t *testing.T) {
	t.Parallel()
	s := NewPlainSASL()
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Kinds: []string{KindKraftd, KindKraftd, KindKraftd}, Props: s.ServerProps()})
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
		t.Logf("kafka-metadata-quorum %s describe --status over SASL_PLAINTEXT:\n%s", v, status)
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

	UseSASL(t, members[0].Addr(), plain.Auth{User: "admin", Pass: "not-the-password"}.AsMechanism())
	if _, err := Dial(context.Background(), members[0].Addr()); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("a wrong password: %v", err)
	}
	Eventually(t, ReadyTimeout, "the failed authentication logged", nil, func() error {
		if out := members[0].Proc().Output(); !strings.Contains(out, "SASL authentication failed") {
			return errorf("not yet")
		}
		return nil
	})
	for _, m := range members {
		out := m.Proc().Output()
		if strings.Contains(out, "not-the-password") || strings.Contains(out, s.ControllerPassword) || strings.Contains(out, s.AdminPassword) {
			t.Errorf("%s logged a password", m)
		}
	}
}

// One kraftd and two Apache controllers over SASL_PLAINTEXT with PLAIN:
// each side authenticates to the other, and leadership passes from one
// implementation to the other and back.
func TestMixedQuorumOverSASLPlain(t *testing.T) {
	t.Parallel()
	forVersions(t, runMixedOverSASLPlain)
}

func runMixedOverSASLPlain(t *testing.T, version string) {
	ReserveJVMs(t, 2)
	s := NewPlainSASL()
	members, _ := NewMixedStaticQuorum(t, MixedOptions{Version: version, Kinds: []string{KindKraftd, KindApache, KindApache}, Props: s.ServerProps()})
	s.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)
	passLeadershipBothWays(t, members, "SASL_PLAINTEXT")
}

// One kraftd and two Apache controllers over SASL_SSL with PLAIN between
// them: TestMixedQuorumOverSASLSSLScram (scram_test.go), which also has
// clients authenticate with SCRAM.

// passLeadershipBothWays kills leaders until kraftd (member 1) and Apache
// have each led, and checks that Apache replayed kraftd's registration
// with its controller listener's security protocol.
func passLeadershipBothWays(t *testing.T, members []*MixedMember, protocol string) {
	t.Helper()
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
	registered := regexp.MustCompile(`ControllerRegistration\(id=1, [^\n]*listeners=\[Endpoint\(listenerName='CONTROLLER', securityProtocol=` + protocol)
	for _, m := range members[1:] {
		if !registered.MatchString(m.Proc().Output()) {
			t.Errorf("%s never replayed kraftd's registration with a %s listener", m, protocol)
		}
	}
}

// Three kraftd controllers over SASL_SSL with PLAIN: TLS first, then SASL,
// between the controllers and for kafka-metadata-quorum.
func TestKraftdQuorumOverSASLSSL(t *testing.T) {
	t.Parallel()
	k := NewTestPKI(t)
	s := NewPlainSASL()
	props := k.ServerProps("none")
	for key, v := range s.ServerProps() {
		props[key] = v
	}
	props["listener.security.protocol.map"] = "CONTROLLER:SASL_SSL"
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Kinds: []string{KindKraftd, KindKraftd, KindKraftd}, Props: props, KraftdProps: k.KraftdProps()})
	k.UseFor(t, MixedAddrs(members...)...)
	s.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)
	WaitMixedLeader(t, members, VotersCaughtUp(1))

	ReserveJVMs(t, 1)
	clientProps := filepath.Join(t.TempDir(), "client.properties")
	writeFile(t, clientProps, []byte(FormatProperties(map[string]string{
		"security.protocol":   "SASL_SSL",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": k.Files.TruststorePEM,
		"sasl.mechanism": "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` +
			s.AdminPassword + `";`,
	})))
	for _, v := range Versions {
		status, err := MetadataQuorum(t, v, "--bootstrap-controller", members[0].Addr(), "--command-config", clientProps, "describe", "--status")
		if err != nil {
			t.Fatal(err)
		}
		if got := statusLines(status); got["ClusterId"] != clusterID {
			t.Errorf("%s: ClusterId %q, want %q:\n%s", v, got["ClusterId"], clusterID, status)
		}
	}
	checkStatusSecured(t, "SASL_SSL", members, clusterID, clientProps)
	// Without TLS the listener serves nothing, SASL or not.
	tlsAddrs.Delete(members[0].Addr())
	if _, err := Dial(context.Background(), members[0].Addr()); err == nil {
		t.Error("a plaintext SASL client was served on the SASL_SSL listener")
	}
}
