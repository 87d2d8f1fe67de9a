package embed

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/peer"
	"github.com/kraftd/kraftd/server"
)

// describeControllers is DescribeCluster's EndpointType for the
// controller endpoints (KIP-919).
const describeControllers int8 = 2

// ProbeAnswer is what one controller address said to ProbeClusters.
type ProbeAnswer struct {
	Addr string
	// ClusterID is the cluster the controller there serves; "" when it
	// answered but would not say (Err tells why).
	ClusterID string
	Err       error
}

// ProbeClusters asks each address, at once and within timeout in all,
// which cluster the controller there serves (DescribeCluster v1 for the
// controller endpoints, after ApiVersions), over the controller listener's
// security as a peer would. It returns the addresses that answered; an
// address nothing answers at, or that does not finish in time, is left
// out. format uses it so as not to bootstrap a second quorum where one
// already runs. The stores of an SSL listener must be loaded (LoadTLS).
func ProbeClusters(cfg *server.Config, addrs []string, timeout time.Duration) ([]ProbeAnswer, error) {
	handshake, mechanism, err := cfg.PeerSecurity()
	if err != nil {
		return nil, err
	}
	results := make(chan peer.Result, len(addrs))
	peers := peer.New("kraftd-format", timeout, func(r peer.Result) { results <- r }, zerolog.Nop())
	// Close waits for dials still under way; the caller need not.
	defer func() { go peers.Close() }()
	peers.UseSecurity(handshake, mechanism)
	for i, addr := range addrs {
		peers.SetAddress(int32(i), addr)
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(1)
		req.EndpointType = describeControllers
		peers.Send(int32(i), 0, req)
	}
	var out []ProbeAnswer
	deadline := time.After(timeout)
	for range addrs {
		var r peer.Result
		select {
		case r = <-results:
		case <-deadline:
			return out, nil
		}
		if a, answered := probeAnswer(addrs[r.NodeID], r); answered {
			out = append(out, a)
		}
	}
	return out, nil
}

// probeAnswer reads one result: answered is false when nothing answered
// (no connection, or none that got past ApiVersions).
func probeAnswer(addr string, r peer.Result) (a ProbeAnswer, answered bool) {
	a.Addr = addr
	switch {
	case r.Err != nil:
		// Only peer.ErrUnsupported comes after ApiVersions answered: a
		// Kafka node listens there, but it does not serve DescribeCluster
		// v1 (an Apache release before 3.7).
		a.Err = r.Err
		return a, errors.Is(r.Err, peer.ErrUnsupported)
	default:
		resp := r.Response.(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 {
			a.Err = fmt.Errorf("DescribeCluster: %w", kerr.ErrorForCode(resp.ErrorCode))
			return a, true
		}
		a.ClusterID = resp.ClusterID
		return a, true
	}
}
