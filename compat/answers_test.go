package compat

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

// standardAuthorizer is Apache's KRaft authorizer, which kraftd's
// authorizer.class.name accepts too.
const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// A standalone Apache controller of the newest line and a standalone
// kraftd, both formatted at 4.0-IV3 with an authorizer, give the same
// answers (issue 34, items 8 to 13): the format tool's lines; the API keys
// and versions a controller serves; a features Epoch that moves only when
// a feature level does; the cluster-wide min.insync.replicas an upgrade
// that turns on ELR writes; the refusal to unregister the active
// controller; CreateAcls with a MATCH or ANY pattern, which fails the
// whole request and creates nothing. A node of a two-voter quorum whose
// peer never starts has not loaded its ACLs: each refuses CreateAcls the
// same way.
func TestAnswersMatchApache(t *testing.T) {
	t.Parallel()
	v := Lines[len(Lines)-1]
	t.Run(v, func(t *testing.T) {
		t.Parallel()
		KafkaCache(t, v)
		ReserveJVMs(t, 3) // two Apache controllers and a tool
		runAnswersMatchApache(t, v)
	})
}

func runAnswersMatchApache(t *testing.T, v string) {
	at := stamp(t)
	props := map[string]string{"authorizer.class.name": standardAuthorizer, "super.users": "User:ANONYMOUS"}
	clusterID := NewUUID()
	apache := NewApacheController(t, ApacheOptions{Version: v, NodeID: 1, Props: props})
	port := FreePorts(t, 1)[0]
	conf := WriteKraftdConfig(t, 1, Addr(port), filepath.Join(t.TempDir(), "metadata"), props)
	formats := []string{"--standalone", "--release-version", "4.0-IV3"}
	compareFormat(t, strings.Join(formats, " "), apache.Format(t, clusterID, formats...), KraftdFormat(t, 1, conf, clusterID, formats...))
	StartApache(t, apache)
	kraftd := StartKraftd(t, "kraftd-answers", "--log-format", "json", "start", "--config", conf)
	notReady := startNotReady(t, v)

	// While those start: the line printed by a format without voters.
	other := NewApacheController(t, ApacheOptions{Version: v, NodeID: 2})
	otherConf := WriteKraftdConfig(t, 2, Addr(FreePorts(t, 1)[0]), filepath.Join(t.TempDir(), "metadata"),
		map[string]string{"controller.quorum.bootstrap.servers": Addr(port)})
	compareFormat(t, "--no-initial-controllers", other.Format(t, clusterID, "--no-initial-controllers"),
		KraftdFormat(t, 2, otherConf, clusterID, "--no-initial-controllers"))

	apacheAddr, kraftdAddr := apache.Addr(), Addr(port)
	mv, err := controller.ParseReleaseVersion("4.0-IV3")
	if err != nil {
		t.Fatal(err)
	}
	waitFinalized(t, apacheAddr, apache.Proc, mv)
	waitFinalized(t, kraftdAddr, kraftd, mv)
	at("both lead at 4.0-IV3")

	compareAPIKeys(t, apacheAddr, kraftdAddr)
	before := map[string]int64{apacheAddr: stableFeaturesEpoch(t, apacheAddr), kraftdAddr: stableFeaturesEpoch(t, kraftdAddr)}
	at("API keys and features epochs compared")

	for _, addr := range []string{apacheAddr, kraftdAddr} {
		if out := runFeatures(t, v, addr, "upgrade", "--release-version", "4.4"); strings.Contains(out, "exit: failed") {
			t.Fatalf("kafka-features upgrade --release-version 4.4 against %s: %s", addr, out)
		}
	}
	want, got := clusterConfigs(t, apacheAddr), clusterConfigs(t, kraftdAddr)
	if !slices.Equal(got, want) || !slices.Contains(got, "min.insync.replicas=1") {
		t.Errorf("cluster-wide configs after the upgrade to 4.4:\nApache: %v\nkraftd: %v", want, got)
	}
	for _, addr := range []string{apacheAddr, kraftdAddr} {
		if after := stableFeaturesEpoch(t, addr); after <= before[addr] {
			t.Errorf("%s: features epoch %d after the upgrade, %d before", addr, after, before[addr])
		}
	}
	at("upgrade compared")

	compareAnswer(t, "UnregisterController of the active controller", apacheAddr, kraftdAddr, func(addr string) string {
		req := kmsg.NewPtrUnregisterControllerRequest()
		req.ControllerID = 1
		resp := mustRequest(t, addr, req).(*kmsg.UnregisterControllerResponse)
		return fmt.Sprintf("%d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	})
	// NB: an UNKNOWN pattern type (0) makes Apache close the connection,
	// and beside an unknown code (9) it answers the valid ACL's success
	// with an empty message where kraftd sends none: not compared yet.
	for _, pattern := range []kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeMatch, kmsg.ACLResourcePatternTypeAny} {
		compareAnswer(t, fmt.Sprintf("CreateAcls with pattern type %d", pattern), apacheAddr, kraftdAddr, func(addr string) string {
			return createAclsAnswer(t, addr, pattern) + " then " + describeAllAcls(t, addr)
		})
	}
	compareAnswer(t, "CreateAcls before the ACLs are loaded", notReady[0], notReady[1], func(addr string) string {
		return createAclsAnswer(t, addr, kmsg.ACLResourcePatternTypeLiteral)
	})
	at("refusals compared")
}

// compareFormat compares the Formatting lines two format tools printed,
// with the directories left out.
func compareFormat(t *testing.T, args, apache, kraftd string) {
	t.Helper()
	mask := func(out string) []string {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, "Formatting ") {
				continue // Apache prints its bootstrap records too, kraftd's harness its command line
			}
			fields := strings.Fields(l)
			for i, f := range fields {
				if strings.HasPrefix(f, "/") {
					fields[i] = "<dir>"
				}
			}
			lines = append(lines, strings.Join(fields, " "))
		}
		return lines
	}
	if a, k := mask(apache), mask(kraftd); !slices.Equal(a, k) {
		t.Errorf("format %s printed:\nApache: %q\nkraftd: %q", args, a, k)
	}
}

// startNotReady starts an Apache controller and a kraftd, each the first
// of a static two-voter quorum whose second voter never starts, with an
// authorizer whose only super user is not the test's principal: neither
// ever loads its ACLs. It returns their addresses.
func startNotReady(t *testing.T, v string) []string {
	t.Helper()
	props := map[string]string{"authorizer.class.name": standardAuthorizer, "super.users": "User:admin"}
	ports := FreePorts(t, 3)
	voters := func(own int) string { return fmt.Sprintf("1@%s,2@%s", Addr(own), Addr(ports[2])) }
	apache := NewApacheController(t, ApacheOptions{Version: v, NodeID: 1, Port: ports[0], Voters: voters(ports[0]), Props: props})
	clusterID := NewUUID()
	apache.Format(t, clusterID)
	StartApache(t, apache)
	props["controller.quorum.voters"] = voters(ports[1])
	conf := WriteKraftdConfig(t, 1, Addr(ports[1]), filepath.Join(t.TempDir(), "metadata"), props)
	KraftdFormat(t, 1, conf, clusterID)
	StartKraftd(t, "kraftd-not-ready", "--log-format", "json", "start", "--config", conf)
	addrs := []string{apache.Addr(), Addr(ports[1])}
	for _, addr := range addrs {
		WaitAPIVersions(t, addr, nil)
	}
	return addrs
}

// compareAnswer fails the test when ask answers differently for the two.
func compareAnswer(t *testing.T, what, apacheAddr, kraftdAddr string, ask func(addr string) string) {
	t.Helper()
	if want, got := ask(apacheAddr), ask(kraftdAddr); got != want {
		t.Errorf("%s:\nApache: %s\nkraftd: %s", what, want, got)
	}
}

func mustRequest(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := Request(addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// compareAPIKeys compares the API keys and version ranges both serve.
func compareAPIKeys(t *testing.T, apacheAddr, kraftdAddr string) {
	t.Helper()
	keys := func(addr string) map[int16]string {
		resp, err := APIVersions(addr)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int16]string{}
		for _, k := range resp.ApiKeys {
			out[k.ApiKey] = fmt.Sprintf("%s %d-%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
		}
		return out
	}
	want, got := keys(apacheAddr), keys(kraftdAddr)
	for key := int16(0); key < 200; key++ {
		if want[key] != got[key] {
			t.Errorf("ApiVersions, key %d: Apache serves %q, kraftd %q", key, want[key], got[key])
		}
	}
}

// stableFeaturesEpoch is the FinalizedFeaturesEpoch addr answers, read
// again once the log has grown by some records (Apache's controller writes
// a NoOp every half second): it must not have moved.
func stableFeaturesEpoch(t *testing.T, addr string) int64 {
	t.Helper()
	epoch := func() int64 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(4)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-compat", "0"
		return mustRequest(t, addr, req).(*kmsg.ApiVersionsResponse).FinalizedFeaturesEpoch
	}
	first := epoch()
	start := WaitLeader(t, []string{addr}, nil).HighWatermark
	Eventually(t, ReadyTimeout, addr+" commits more records", nil, func() error {
		if hw := WaitLeader(t, []string{addr}, nil).HighWatermark; hw < start+3 {
			return fmt.Errorf("high watermark %d, was %d", hw, start)
		}
		return nil
	})
	if again := epoch(); again != first {
		t.Errorf("%s: features epoch went from %d to %d while no feature changed", addr, first, again)
	}
	return first
}

// clusterConfigs are the cluster-wide dynamic configs addr describes, as
// name=value, sorted.
func clusterConfigs(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	Eventually(t, ReadyTimeout, addr+" describes the cluster-wide configs", nil, func() error {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(4)
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: ""}}
		resp := mustRequest(t, addr, req).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			return fmt.Errorf("answer %+v", resp.Resources)
		}
		out = nil
		for _, c := range resp.Resources[0].Configs {
			out = append(out, c.Name+"="+deref(c.Value))
		}
		slices.Sort(out)
		return nil
	})
	return out
}

// createAclsAnswer sends CreateAcls with a valid literal ACL and one of
// pattern, and returns each result's code and message.
func createAclsAnswer(t *testing.T, addr string, pattern kmsg.ACLResourcePatternType) string {
	t.Helper()
	creation := func(p kmsg.ACLResourcePatternType) kmsg.CreateACLsRequestCreation {
		return kmsg.CreateACLsRequestCreation{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "orders",
			ResourcePatternType: p, Principal: "User:alice", Host: "*",
			Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	req.Creations = []kmsg.CreateACLsRequestCreation{creation(kmsg.ACLResourcePatternTypeLiteral), creation(pattern)}
	r, err := Request(addr, req)
	if err != nil {
		return "no answer" // the connection closed
	}
	resp := r.(*kmsg.CreateACLsResponse)
	var out []string
	for _, r := range resp.Results {
		msg := "null"
		if r.ErrorMessage != nil {
			msg = fmt.Sprintf("%q", *r.ErrorMessage)
		}
		out = append(out, fmt.Sprintf("%d %s", r.ErrorCode, msg))
	}
	return strings.Join(out, "; ")
}

// describeAllAcls is how many ACLs addr holds. Both answer CreateAcls
// once its records commit, so an ACL it wrote is there.
func describeAllAcls(t *testing.T, addr string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.SetVersion(3)
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp := mustRequest(t, addr, req).(*kmsg.DescribeACLsResponse)
	return fmt.Sprintf("error %d, %d resources", resp.ErrorCode, len(resp.Resources))
}
