package compat

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The forged-Fetch attack of issue 14 fails once the listener requires
// mutual TLS. On a plaintext listener a client that sends Fetch claiming a
// voter's replica id at the leader's log end makes the leader count that
// voter as caught up, and the high watermark moves over records only the
// leader holds. Here three kraftd controllers require client certificates
// (ssl.client.auth=required); with both followers paused the leader holds
// a record past its high watermark. A client without a certificate the CA
// signed sends that Fetch: the handshake refuses it and the high watermark
// stays. The same Fetch from a client whose certificate the CA signed moves
// it, which shows the Fetch is the attack: mutual TLS decides who may
// connect, and which principal may claim a replica id is the authorizer's
// (issue 15), on kraftd as on Apache's controllers without an authorizer.
func TestForgedFetchRefusedByMutualTLS(t *testing.T) {
	t.Parallel()
	k := NewTestPKI(t)
	props := k.ServerProps("required")
	// The leader must not resign while its followers are paused.
	props["controller.quorum.fetch.timeout.ms"] = "120000"
	members, clusterID := NewMixedStaticQuorum(t, MixedOptions{Kinds: []string{KindKraftd, KindKraftd, KindKraftd},
		Props: props, KraftdProps: k.KraftdProps()})
	k.UseFor(t, MixedAddrs(members...)...)
	StartMixed(t, members...)
	st := WaitMixedLeader(t, members, VotersCaughtUp(1))
	leader := MemberByID(members, st.LeaderID)
	followers := Without(members, leader)
	for _, f := range followers {
		if err := f.Proc().Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Proc().Resume() })
	}

	// A write the paused followers cannot acknowledge, answered once
	// committed; the connection closes when the test ends.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, err := Dial(ctx, leader.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeBroker
		value := "123456"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "log.retention.ms", &value
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		conn.Request(ctx, req)
	}()
	var hw, end int64
	var epoch int32
	Eventually(t, ReadyTimeout, "a record past the high watermark", leader.Proc(), func() error {
		s, err := DescribeQuorum(leader.Addr())
		if err != nil {
			return err
		}
		self, ok := ReplicaState(s, leader.ID)
		if !ok || self.LogEndOffset <= s.HighWatermark {
			return errorf("log end %d, high watermark %d", self.LogEndOffset, s.HighWatermark)
		}
		hw, end, epoch = s.HighWatermark, self.LogEndOffset, s.LeaderEpoch
		return nil
	})
	t.Logf("leader %s epoch %d: log end %d, high watermark %d", leader, epoch, end, hw)
	forged := forgedFetch(clusterID, followers[0].ID, epoch, end)

	stranger := NewTestPKI(t)
	for name, cfg := range map[string]*tls.Config{
		"no client certificate":                {InsecureSkipVerify: true},
		"a certificate another CA signed":      strangerConfig(stranger),
		"the controllers' CA trusted, no cert": {RootCAs: k.ClientConfig().RootCAs, ServerName: "127.0.0.1"},
	} {
		if err := sendOverTLS(leader.Addr(), cfg, forged); err == nil {
			t.Errorf("%s: the forged Fetch was answered", name)
		} else {
			t.Logf("%s: refused: %v", name, err)
		}
	}
	s, err := DescribeQuorum(leader.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if s.HighWatermark != hw {
		t.Fatalf("after the refused Fetches the high watermark is %d, was %d", s.HighWatermark, hw)
	}

	// A certificate the CA signed gets in, and the claim is believed.
	if _, err := Request(leader.Addr(), forged); err != nil {
		t.Fatal(err)
	}
	Eventually(t, ReadyTimeout, "the trusted client's Fetch counted", leader.Proc(), func() error {
		s, err := DescribeQuorum(leader.Addr())
		if err != nil {
			return err
		}
		if s.HighWatermark < end {
			// The first Fetch at the log end tells the leader the
			// follower's offset; a second one carries the new high watermark.
			Request(leader.Addr(), forged)
			return errorf("high watermark %d, want %d", s.HighWatermark, end)
		}
		return nil
	})
	for _, f := range followers {
		f.Proc().Resume()
	}
	WaitMixedLeader(t, members, VotersCaughtUp(end))
}

// forgedFetch is a Fetch v13 claiming to come from voter replica at the
// leader's log end in epoch.
func forgedFetch(clusterID string, replica, epoch int32, end int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(13)
	req.ClusterID = &clusterID
	req.ReplicaID = replica
	req.MaxBytes = 1 << 20
	topic := kmsg.NewFetchRequestTopic()
	topic.TopicID = [16]byte{15: 1} // __cluster_metadata's fixed topic id
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch, p.PartitionMaxBytes = epoch, end, epoch, 1<<20
	topic.Partitions = append(topic.Partitions, p)
	req.Topics = append(req.Topics, topic)
	return req
}

// strangerConfig presents a client certificate of another CA and trusts
// any server.
func strangerConfig(k *TestPKI) *tls.Config {
	cfg := k.ClientConfig()
	cert := cfg.Certificates[0]
	return &tls.Config{InsecureSkipVerify: true, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}
}

// sendOverTLS sends req over a TLS connection made with cfg and reads the
// answer; an error means the connection never got one.
func sendOverTLS(addr string, cfg *tls.Config, req kmsg.Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
	defer cancel()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(RequestTimeout))
	if _, err := c.Write(AppendRequest(nil, req, 1, ClientID)); err != nil {
		return err
	}
	frame, err := ReadFrame(c)
	if err != nil {
		return err
	}
	_, err = ParseResponse(req, 1, frame)
	return err
}
