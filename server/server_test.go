package server

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/protocol"
)

// stillBackend is wiretest's server with no quorum behind it: a Fetch
// waits until Release is closed (or the connection goes away), standing in
// for a parked fetch; tests of SCRAM use scramBackend.
type stillBackend struct{ *wiretest.Backend }

func (b stillBackend) Raft(ctx context.Context, r *Request) (kmsg.Response, error) {
	return b.Answer(ctx, r.Header.Key, r.Body)
}

func startServer(t *testing.T) (*Server, string, *stillBackend) {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0")
}

// startServerAt is startServer listening on addr (a restart on a known port).
func startServerAt(t *testing.T, addr string) (*Server, string, *stillBackend) {
	t.Helper()
	cfg, err := ParseConfig(map[string]string{
		"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
		"listeners": "CONTROLLER://" + addr, "log.dirs": t.TempDir(), "socket.request.max.bytes": "1048576",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := &stillBackend{wiretest.NewBackend()}
	s := New(cfg, b, zerolog.New(zerolog.NewTestWriter(t)))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, s.Addr("CONTROLLER").String(), b
}

func TestApiVersionsRanges(t *testing.T) {
	s, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	for _, v := range []int16{0, 3, 4, 5} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-test", "1.0"
		c.Send(req, int32(v))
		corr, resp := c.Recv(req)
		av := resp.(*kmsg.ApiVersionsResponse)
		if corr != int32(v) || av.ErrorCode != 0 {
			t.Fatalf("v%d: corr %d err %d", v, corr, av.ErrorCode)
		}
		for _, k := range av.ApiKeys {
			want, _ := s.Registry().Lookup(k.ApiKey)
			if k.MinVersion != want.Min || k.MaxVersion != want.Max {
				t.Fatalf("key %d advertised %d-%d, registry %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, want.Min, want.Max)
			}
		}
		if len(av.ApiKeys) != len(s.Registry().Keys()) {
			t.Fatalf("v%d lists %d keys", v, len(av.ApiKeys))
		}
		hasKraft := false
		for _, f := range av.SupportedFeatures {
			hasKraft = hasKraft || f.Name == "kraft.version"
		}
		if v == 3 && hasKraft || v == 4 && !hasKraft {
			t.Fatalf("v%d: kraft.version (min 0) listed=%v", v, hasKraft)
		}
		if v >= 3 && (av.FinalizedFeaturesEpoch != 5 || len(av.FinalizedFeatures) != 2) {
			t.Fatalf("v%d finalized %+v", v, av.FinalizedFeatures)
		}
	}
}

// ApiVersions v5 (KIP-1242) names the cluster and node a client means to
// reach: both or neither, else INVALID_REQUEST with no ApiKeys. A
// controller, like Apache's, does not compare them with its own.
func TestApiVersionsV5ClusterAndNodeID(t *testing.T) {
	_, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	other := "some-other-cluster"
	for i, tc := range []struct {
		clusterID *string
		nodeID    int32
		wantErr   int16
	}{
		{nil, -1, 0},
		{&other, 3, 0},
		{&other, -1, kerr.InvalidRequest.Code},
		{nil, 3, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(5)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-test", "1.0"
		req.ClusterID, req.NodeID = tc.clusterID, tc.nodeID
		c.Send(req, int32(i))
		_, resp := c.Recv(req)
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != tc.wantErr || (tc.wantErr != 0) != (len(av.ApiKeys) == 0) {
			t.Fatalf("case %d: error %d with %d keys, want error %d", i, av.ErrorCode, len(av.ApiKeys), tc.wantErr)
		}
	}
}

func TestApiVersionsUnknownVersionAnsweredAtV0(t *testing.T) {
	_, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	// ApiVersions v9 with a flexible header and an empty tagged body.
	c.Raw(protocol.AppendFrame(nil, []byte{0, 18, 0, 9, 0, 0, 0, 7, 0, 1, 'x', 0, 0}))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	corr, resp := c.Recv(req)
	av := resp.(*kmsg.ApiVersionsResponse)
	if corr != 7 || av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
		t.Fatalf("corr %d %+v", corr, av)
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	_, addr, _ := startServer(t)
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	fetchV3 := kmsg.NewPtrFetchRequest()
	fetchV3.SetVersion(3)
	for name, bytes := range map[string][]byte{
		"negative size":       {0x80, 0, 0, 0},
		"zero size":           {0, 0, 0, 0},
		"oversized":           binary.BigEndian.AppendUint32(nil, 2<<20),
		"truncated header":    protocol.AppendFrame(nil, []byte{0, 18, 0}),
		"unknown key":         protocol.AppendFrame(nil, []byte{0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0, 0}),
		"broker-only api":     protocol.AppendFrame(nil, produce.AppendTo(protocol.AppendRequestHeader(nil, produce, 1, "c"))),
		"unsupported version": protocol.AppendFrame(nil, fetchV3.AppendTo(protocol.AppendRequestHeader(nil, fetchV3, 1, "c"))),
		"undecodable body":    protocol.AppendFrame(nil, []byte{0, 55, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0x05, 0xff}),
		"tls client hello":    {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03},
		"http":                []byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			other := wiretest.Dial(t, addr)
			bad := wiretest.Dial(t, addr)
			bad.Raw(bytes)
			if !bad.Closed() {
				t.Fatal("connection left open")
			}
			req := kmsg.NewPtrApiVersionsRequest()
			other.Send(req, 3)
			if corr, _ := other.Recv(req); corr != 3 {
				t.Fatalf("other connection got corr %d", corr)
			}
		})
	}
}

func TestPipelinedResponsesKeepOrderAndParkedFetchBlocksNoOne(t *testing.T) {
	_, addr, b := startServer(t)
	c := wiretest.Dial(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(17)
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(2)
	c.Send(fetch, 1) // parks until released
	c.Send(dq, 2)    // answered at once by the backend, but must wait its turn

	other := wiretest.Dial(t, addr)
	other.Send(dq, 9)
	if corr, resp := other.Recv(dq); corr != 9 || resp.(*kmsg.DescribeQuorumResponse).ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("other connection: corr %d", corr)
	}
	close(b.Release)
	if corr, _ := c.Recv(fetch); corr != 1 {
		t.Fatalf("first response has corr %d", corr)
	}
	if corr, _ := c.Recv(dq); corr != 2 {
		t.Fatalf("second response has corr %d", corr)
	}
}

// More requests than may be in flight at once, written in one go and then
// half-closed: every one is answered, in order, before the server closes.
func TestManyPipelinedRequestsAnsweredInOrderAfterHalfClose(t *testing.T) {
	s, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(2)
	n := int32(3 * s.cfg.QueuedMaxRequests)
	var all []byte
	for corr := int32(0); corr < n; corr++ {
		all = protocol.AppendFrame(all, dq.AppendTo(protocol.AppendRequestHeader(nil, dq, corr, "test")))
	}
	go func() {
		c.Write(all)
		c.Conn.(*net.TCPConn).CloseWrite()
	}()
	for want := int32(0); want < n; want++ {
		if corr, _ := c.Recv(dq); corr != want {
			t.Fatalf("response %d has corr %d", want, corr)
		}
	}
	if !c.Closed() {
		t.Fatal("connection left open after the last answer")
	}
}

func TestDescribeClusterEndpointTypes(t *testing.T) {
	_, addr, _ := startServer(t)
	c := wiretest.Dial(t, addr)
	for i, tc := range []struct {
		version  int16
		endpoint int8
		want     int16
	}{
		{2, 2, 0},
		{1, 1, kerr.MismatchedEndpointType.Code},
		{1, 3, kerr.UnsupportedEndpointType.Code},
		{0, 1, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(tc.version)
		req.EndpointType = tc.endpoint
		c.Send(req, int32(i))
		_, resp := c.Recv(req)
		dc := resp.(*kmsg.DescribeClusterResponse)
		if dc.ErrorCode != tc.want {
			t.Fatalf("v%d type %d: error %d, want %d", tc.version, tc.endpoint, dc.ErrorCode, tc.want)
		}
		if tc.want == 0 && (dc.ControllerID != 1 || dc.ClusterID != "q1Sh-9_ISia_zwGINzRvyQ" || len(dc.Brokers) != 1 || dc.EndpointType != 2) {
			t.Fatalf("%+v", dc)
		}
	}
}

func TestPeersNegotiateAndDowngrade(t *testing.T) {
	_, addr, _ := startServer(t)
	results := make(chan peer.Result, 4)
	p := peer.New("raft-client-9", 5*time.Second, func(r peer.Result) { results <- r }, zerolog.Nop())
	defer p.Close()
	p.SetAddress(1, addr)
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.SetVersion(dq.MaxVersion())
	p.Send(1, 42, dq)
	r := <-results
	if r.Err != nil || r.Tag != 42 || r.Response.(*kmsg.DescribeQuorumResponse).ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("%+v", r)
	}
	if v, ok := p.MaxVersion(1, 52); !ok || v != 2 {
		t.Fatalf("vote max %d %v", v, ok)
	}
	p.SetAddress(2, "127.0.0.1:1")
	p.Send(2, 7, dq)
	if r := <-results; r.Err == nil || r.Tag != 7 {
		t.Fatalf("unreachable peer: %+v", r)
	}
}

// The keys Apache 4.4's controller lists but does not handle, and those it
// does not list, as compat.TestAnswersMatchApache compares them in full:
// DescribeDelegationToken is listed v1-3 and answered UNKNOWN_SERVER_ERROR;
// DescribeClientQuotas is a broker's and not listed.
func TestControllerOnlyKeysAsApache(t *testing.T) {
	s, addr, _ := startServer(t)
	if r, ok := s.Registry().Lookup(41); !ok || r.Min != 1 || r.Max != 3 {
		t.Errorf("DescribeDelegationToken: listed %v, versions %d-%d, want 1-3", ok, r.Min, r.Max)
	}
	if _, ok := s.Registry().Lookup(48); ok {
		t.Error("DescribeClientQuotas is listed; Apache's controller does not list it")
	}
	c := wiretest.Dial(t, addr)
	for v := int16(1); v <= 3; v++ {
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		req.SetVersion(v)
		c.Send(req, int32(v))
		if _, resp := c.Recv(req); resp.(*kmsg.DescribeDelegationTokenResponse).ErrorCode != kerr.UnknownServerError.Code {
			t.Errorf("DescribeDelegationToken v%d: %+v", v, resp)
		}
	}
}
