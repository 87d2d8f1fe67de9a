package embed

// Tests of the assembled node over the wire: a real Node and Server on
// loopback (benchutil_test.go), asked by a raw Kafka client (wire_test.go).

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/authz"
	"github.com/kraftd/kraftd/internal/wiretest"
	"github.com/kraftd/kraftd/metadata"
	"github.com/kraftd/kraftd/protocol"
	"github.com/kraftd/kraftd/server"
)

// CreateAcls, DescribeAcls and DeleteAcls against one real kraftd node with
// the authorizer on (the client is a super user): created ACLs are
// described and govern, deleted ones are gone.
func TestACLRequestsOnANode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	nodes := startBenchQuorumWith(t, 1, map[string]string{
		"authorizer.class.name": server.StandardAuthorizerClass, "super.users": "User:ANONYMOUS",
	})
	waitBenchLeader(t, nodes, 30*time.Second)
	c := wiretest.Dial(t, nodes[0].srv.Addr("CONTROLLER").String())
	corr := int32(0)
	roundTrip := func(req kmsg.Request) kmsg.Response {
		corr++
		c.Send(req, corr)
		_, resp := c.Recv(req)
		return resp
	}
	create := wiretest.CreateACLsRequest(
		authz.ACL{ResourceType: authz.ResourceTopic, ResourceName: "orders", PatternType: authz.PatternLiteral, Principal: "User:alice", Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow},
		authz.ACL{ResourceType: authz.ResourceGroup, ResourceName: "app-", PatternType: authz.PatternPrefixed, Principal: "User:alice", Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow},
		authz.ACL{ResourceType: authz.ResourceCluster, ResourceName: "wrong", PatternType: authz.PatternLiteral, Principal: "User:alice", Host: "*", Operation: authz.OpAlter, Permission: authz.PermissionAllow},
	)
	var results []kmsg.CreateACLsResponseResult
	deadline := time.Now().Add(30 * time.Second)
	for {
		results = roundTrip(create).(*kmsg.CreateACLsResponse).Results
		if results[0].ErrorCode != kerr.NotController.Code || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the leader activates its controller after its first commit
	}
	if results[0].ErrorCode != 0 || results[1].ErrorCode != 0 || results[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("CreateAcls results %+v", results)
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version = 3
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if d := roundTrip(describe).(*kmsg.DescribeACLsResponse); d.ErrorCode != 0 || len(d.Resources) != 2 || d.Resources[0].ResourceName != "orders" {
		t.Fatalf("DescribeAcls: %+v", d)
	}
	idx := nodes[0].node.Controller().ACLs()
	a := authz.New(idx, nil, false)
	if !a.Authorize(authz.Action{Principal: "User:alice", Host: "127.0.0.1", Operation: authz.OpRead, ResourceType: authz.ResourceGroup, ResourceName: "app-1"}).Allowed {
		t.Fatal("the created prefixed ACL does not govern")
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	name := "orders"
	f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeMatch
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dr := roundTrip(del).(*kmsg.DeleteACLsResponse)
	if len(dr.Results) != 1 || dr.Results[0].ErrorCode != 0 || len(dr.Results[0].MatchingACLs) != 1 || dr.Results[0].MatchingACLs[0].Principal != "User:alice" {
		t.Fatalf("DeleteAcls: %+v", dr)
	}
	if idx.Len() != 1 {
		t.Fatalf("%d ACLs after the delete, want 1", idx.Len())
	}
}

// On a real node, a heartbeat that unfences (a write to commit) and a
// steady one pipelined behind it on one connection are both answered, in
// order: the first once its record committed, on a goroutine of its own,
// the second at once but after it.
func TestHeartbeatThatWritesAndOneThatDoesNotOnOneConnection(t *testing.T) {
	nodes := startBenchQuorum(t, 1)
	leader := waitBenchLeader(t, nodes, 30*time.Second)
	ctl := leader.Controller()
	epochs := registerBrokersInParallel(t, ctl, leader.ClusterID(), 2, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := ctl.BrokerHeartbeat(ctx, benchHeartbeat(2, epochs[2])); err != nil || resp.IsFenced {
		t.Fatalf("unfence broker 2: %v %+v", err, resp)
	}

	c := wiretest.Dial(t, nodes[0].srv.Addr("CONTROLLER").String())
	unfence, steady := benchHeartbeat(1, epochs[1]), benchHeartbeat(2, epochs[2])
	c.Send(unfence, 1)
	c.Send(steady, 2)
	corr, resp := c.Recv(unfence)
	if hb := resp.(*kmsg.BrokerHeartbeatResponse); corr != 1 || hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("unfencing heartbeat: corr %d %+v", corr, hb)
	}
	corr, resp = c.Recv(steady)
	if hb := resp.(*kmsg.BrokerHeartbeatResponse); corr != 2 || hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("steady heartbeat: corr %d %+v", corr, hb)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A client pipelines thousands of Fetch requests, each answered with ~2 MiB
// of records, and never reads an answer. The node stops reading from it
// once it is owed maxOwedPerConn, so its heap stays bounded, and another
// client is still answered.
func TestClientThatNeverReadsItsFetchesKeepsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and fills its log")
	}
	nodes := startBenchQuorum(t, 1)
	leader := waitBenchLeader(t, nodes, 30*time.Second)
	rec := paddedConfigRecord(t, 32<<10)
	batch := make([]metadata.Record, 16)
	for i := range batch {
		batch[i] = rec
	}
	for range 4 { // 2 MiB of records, in one segment
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := leader.Propose(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	addr := nodes[0].srv.Addr("CONTROLLER").String()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes = -1, 8<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.FetchRequestTopicPartition{{
		Partition: 0, CurrentLeaderEpoch: leader.Status().Epoch, FetchOffset: 0, PartitionMaxBytes: 8 << 20}}}}

	// The answer really is large: read one.
	probe := wiretest.Dial(t, addr)
	probe.Send(fetch, 0)
	_, resp := probe.Recv(fetch)
	size := len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
	if size < 1<<20 {
		t.Fatalf("a fetch is answered with only %d bytes of records", size)
	}
	base := heapInUse()

	hog, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hog.Close()
	var all []byte
	for corr := int32(1); corr <= 10000; corr++ {
		all = protocol.AppendFrame(all, fetch.AppendTo(protocol.AppendRequestHeader(nil, fetch, corr, "hog")))
	}
	written := make(chan int, 1)
	go func() {
		// Blocks once the node stops reading; the deadline ends it.
		hog.SetWriteDeadline(time.Now().Add(5 * time.Second))
		n, _ := hog.Write(all)
		written <- n
	}()
	sent := <-written // all of them, if the socket buffers hold them
	// Sample while the node takes on what it will for the hog.
	peak := uint64(0)
	for range 40 {
		peak = max(peak, heapInUse())
		time.Sleep(50 * time.Millisecond)
	}
	grew := int64(peak) - int64(base)
	t.Logf("fetch answers of %d bytes; the hog wrote %d of %d request bytes; heap grew %.1f MiB", size, sent, len(all), float64(grew)/(1<<20))
	// maxOwedPerConn (32 MiB), with room for the garbage collector's slack;
	// a literal, so that loosening the bound cannot loosen the test.
	if grew > 96<<20 {
		t.Fatalf("heap grew by %d bytes for one client that reads nothing", grew)
	}
	other := wiretest.Dial(t, addr)
	other.Send(fetch, 1)
	if corr, _ := other.Recv(fetch); corr != 1 {
		t.Fatalf("the other client got corr %d", corr)
	}
}

// Several clients pipeline Fetch requests answered with megabytes of
// records and never read: together they hold no more than the one
// node-wide budget (plus one small overdraft each), where each used to
// hold its own 32 MiB. Meanwhile the leader's followers keep fetching (a
// proposal commits), a client that reads its answers still gets records,
// and DescribeQuorum answers.
func TestClientsThatNeverReadShareOneMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node and fills its log")
	}
	// The least budget there is (and a frame limit the code before the
	// budget accepted with it).
	// The silence detector is off (Apache's 2 s fetch timeout instead): the
	// test is about memory, and under -race on a loaded machine a 400 ms
	// bound moved the leadership it proposes through.
	nodes := startBenchQuorumWith(t, 3, map[string]string{
		"queued.max.request.bytes": "20971520", "socket.request.max.bytes": "1048576",
		"kraftd.quorum.silence.timeout.ms": "0"})
	leader := waitBenchLeader(t, nodes, 60*time.Second)
	rec := paddedConfigRecord(t, 32<<10)
	batch := make([]metadata.Record, 16)
	for i := range batch {
		batch[i] = rec
	}
	for range 4 { // 2 MiB of records
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := leader.Propose(ctx, batch); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	var addr string
	for _, n := range nodes {
		if n.node == leader {
			addr = n.srv.Addr("CONTROLLER").String()
		}
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes = -1, 8<<20
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.FetchRequestTopicPartition{{
		Partition: 0, CurrentLeaderEpoch: leader.Status().Epoch, FetchOffset: 0, PartitionMaxBytes: 8 << 20}}}}
	var pipelined []byte
	for corr := int32(1); corr <= 200; corr++ {
		pipelined = protocol.AppendFrame(pipelined, fetch.AppendTo(protocol.AppendRequestHeader(nil, fetch, corr, "hog")))
	}
	base := heapInUse()

	const hogs = 16
	for range hogs {
		hog, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer hog.Close()
		go func() {
			// Blocks once the node stops reading; the deadline ends it.
			hog.SetWriteDeadline(time.Now().Add(10 * time.Second))
			hog.Write(pipelined)
		}()
	}
	// Sample while the node takes on what it will for the hogs.
	peak := uint64(0)
	for range 40 {
		peak = max(peak, heapInUse())
		time.Sleep(50 * time.Millisecond)
	}
	grew := int64(peak) - int64(base)
	t.Logf("%d clients that never read: heap grew %.1f MiB", hogs, float64(grew)/(1<<20))
	// 20 MiB of budget and a small overdraft per client, with room for the
	// garbage collector's slack; each client alone used to hold 32 MiB.
	if grew > 96<<20 {
		t.Fatalf("heap grew by %d MiB for %d clients that read nothing", grew>>20, hogs)
	}
	// The followers fetch from the leader whose budget the hogs hold.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := leader.Propose(ctx, []metadata.Record{&metadata.NoOpRecord{}}); err != nil {
		t.Fatalf("a proposal did not commit while clients held the budget: %v", err)
	}
	reader := wiretest.Dial(t, addr)
	reader.SetDeadline(time.Now().Add(2 * time.Minute))
	reader.Send(fetch, 1)
	_, resp := reader.Recv(fetch)
	if got := len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches); got == 0 {
		t.Fatal("a client that reads its answers was fetched no records while the budget was held")
	}
	describe := kmsg.NewPtrDescribeQuorumRequest()
	describe.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	reader.Send(describe, 2)
	if corr, _ := reader.Recv(describe); corr != 2 {
		t.Fatalf("DescribeQuorum answered corr %d", corr)
	}
}
