package compat

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kraftd/kraftd/controller"
)

// featureRange is one entry of ApiVersions' SupportedFeatures.
type featureRange struct{ min, max int16 }

// matrixBuild is set by the files of build tag matrix (make matrix), which
// runs the matrices make test samples in full.
var matrixBuild bool

// upgradeTypeNames are UpdateFeatures v1's upgrade types, as kafka-features
// names them.
var upgradeTypeNames = map[int8]string{1: "upgrade", 2: "safe downgrade", 3: "unsafe downgrade"}

// For every release line, a standalone Apache controller of the line and a
// standalone kraftd, each formatted --standalone by its own tool at the
// line's default metadata.version, answer the same to every feature
// change: every feature the Apache line knows, at every level from 0 to
// one past its maximum, as an upgrade, a safe downgrade and an unsafe
// downgrade, validate-only (the error code and message of the answer,
// which is all kafka-features prints); and the line's kafka-features
// prints the same text for describe and for dry-run upgrades and
// downgrades of all features at once against both. Where kraftd supports
// more than the line (metadata.version up to 4.4-IV2 against a 4.1
// controller's 4.1-IV1, share.version 2 against 4.2's 1), the levels
// only one of them supports are left out and kraftd's range in a refusal
// is read as the line's: that difference is kraftd's support, not its
// words. Against lines older than 4.2 the two wordings Apache has since
// changed are mapped onto each other (olderWords); the kraft.version of
// 3.9 and 4.0, which they check differently, is left out. Against 4.2, 4.3 and 4.4 every
// answer and every line printed must be the same.
//
// make test runs the newest line; make matrix every line.
func TestFeaturesMatchApache(t *testing.T) {
	t.Parallel()
	lines := Lines[len(Lines)-1:]
	if matrixBuild {
		lines = Lines
	}
	for _, v := range lines {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			KafkaCache(t, v)
			ReserveJVMs(t, 2) // the Apache controller and a tool
			runFeaturesMatchApache(t, v)
		})
	}
}

func runFeaturesMatchApache(t *testing.T, v string) {
	at := stamp(t)
	clusterID := NewUUID()
	apache := NewApacheController(t, ApacheOptions{Version: v, NodeID: 1})
	apache.Format(t, clusterID, "--standalone")
	StartApache(t, apache)
	port := FreePorts(t, 1)[0]
	conf := WriteKraftdConfig(t, 1, Addr(port), filepath.Join(t.TempDir(), "metadata"), nil)
	KraftdFormat(t, 1, conf, clusterID, "--standalone", "--release-version", ReleaseLine(v))
	kraftd := StartKraftd(t, "kraftd-features", "--log-format", "json", "start", "--config", conf)
	apacheAddr, kraftdAddr := apache.Addr(), Addr(port)
	apacheFeatures := waitFinalized(t, apacheAddr, apache.Proc, defaultLevels[v])
	kraftdFeatures := waitFinalized(t, kraftdAddr, kraftd, defaultLevels[v])
	at("both lead with metadata.version finalized")

	t.Logf("supported by Apache %s: %v; by kraftd: %v", v, apacheFeatures, kraftdFeatures)
	compareDescribe(t, v, apacheAddr, kraftdAddr)
	apiVersion := min(maxAPIVersion(t, apacheAddr, 57), maxAPIVersion(t, kraftdAddr, 57))
	names := sortedKeys(apacheFeatures)
	compared := 0
	for _, name := range names {
		a, k := apacheFeatures[name], kraftdFeatures[name]
		if uncheckedKRaftVersion(v, name) {
			continue
		}
		if k == (featureRange{}) && a != k {
			t.Errorf("kraftd does not support %s, which Apache %s supports (%d-%d)", name, v, a.min, a.max)
			continue
		}
		for level := int16(0); level <= a.max+1; level++ {
			if inRange(level, a) != inRange(level, k) {
				continue // only one of them supports the level
			}
			for typ := int8(1); typ <= 3; typ++ {
				want := validateFeatureChange(t, apacheAddr, apiVersion, name, level, typ)
				got := validateFeatureChange(t, kraftdAddr, apiVersion, name, level, typ)
				if a != k {
					got = strings.ReplaceAll(got, fmt.Sprintf("versions %d-%d", k.min, k.max), fmt.Sprintf("versions %d-%d", a.min, a.max))
				}
				if got, want = olderWords(v, got), olderWords(v, want); got != want {
					t.Errorf("%s %s to %d (UpdateFeatures v%d, validate-only):\nApache %s: %s\nkraftd:       %s",
						upgradeTypeNames[typ], name, level, apiVersion, v, want, got)
				}
				compared++
			}
		}
	}
	at(fmt.Sprintf("%d validate-only changes of %v compared", compared, names))

	compareFeaturesTool(t, v, apacheAddr, kraftdAddr, apacheFeatures, kraftdFeatures)
	at("kafka-features describe, upgrade, downgrade and unsafe downgrade (dry-run) compared")
}

// waitFinalized waits until addr answers ApiVersions with metadata.version
// finalized at mv, and returns its supported features. It asks with v4:
// below it both leave out the features whose minimum is 0.
func waitFinalized(t *testing.T, addr string, proc *Process, mv int16) map[string]featureRange {
	t.Helper()
	var supported map[string]featureRange
	Eventually(t, ReadyTimeout, addr+" finalizes metadata.version", proc, func() error {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(4)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kraftd-compat", "0"
		r, err := Request(addr, req)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || resp.FinalizedFeaturesEpoch < 0 {
			return fmt.Errorf("finalized features epoch %d", resp.FinalizedFeaturesEpoch)
		}
		for _, f := range resp.FinalizedFeatures {
			if f.Name == controller.MetadataVersionFeature && f.MaxVersionLevel != mv {
				return fmt.Errorf("metadata.version finalized at %d, want %d", f.MaxVersionLevel, mv)
			}
		}
		supported = map[string]featureRange{}
		for _, f := range resp.SupportedFeatures {
			supported[f.Name] = featureRange{f.MinVersion, f.MaxVersion}
		}
		return nil
	})
	return supported
}

// maxAPIVersion is the newest version of an API key that addr serves.
func maxAPIVersion(t *testing.T, addr string, key int16) int16 {
	t.Helper()
	resp, err := APIVersions(addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return k.MaxVersion
		}
	}
	t.Fatalf("%s does not serve API key %d", addr, key)
	return 0
}

// validateFeatureChange sends a validate-only UpdateFeatures of one
// feature and renders the answer's error codes and messages.
func validateFeatureChange(t *testing.T, addr string, version int16, feature string, level int16, typ int8) string {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.SetVersion(version)
	req.TimeoutMillis = 30000
	req.ValidateOnly = true
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = feature, level, typ
	u.AllowDowngrade = typ != 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	r, err := Request(addr, req)
	if err != nil {
		t.Fatalf("UpdateFeatures to %s: %v", addr, err)
	}
	resp := r.(*kmsg.UpdateFeaturesResponse)
	out := fmt.Sprintf("error %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	for _, res := range resp.Results {
		out += fmt.Sprintf("; %s: error %d %q", res.Feature, res.ErrorCode, deref(res.ErrorMessage))
	}
	return out
}

// uncheckedKRaftVersion: Apache 3.9 and 4.0 answer a validate-only
// kraft.version change to 0 from 1 with success and refuse one to the
// finalized level as "Can't downgrade to a newer version."; 4.1 and later
// check it as kraftd does, so kraft.version is compared from 4.1 on.
func uncheckedKRaftVersion(v, feature string) bool {
	return v < "4.1" && feature == controller.KRaftVersionFeature
}

func inRange(level int16, r featureRange) bool { return level >= r.min && level <= r.max }

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// describeEpoch is the Epoch column of kafka-features describe, which
// counts each quorum's own metadata offsets.
var describeEpoch = regexp.MustCompile(`Epoch: \d+`)

// runFeatures runs the line's kafka-features against addr and returns what
// it printed, with "exit: failed" after a refused command's text.
func runFeatures(t *testing.T, v, addr string, args ...string) string {
	t.Helper()
	out, err := Features(t, v, append([]string{"--bootstrap-controller", addr}, args...)...)
	if err != nil {
		out += "exit: failed\n"
	}
	return out
}

// compareDescribe runs the line's kafka-features describe against both:
// every row of the Apache controller's must be kraftd's, the Epoch left
// out, and the supported range too where kraftd's differs (logged).
func compareDescribe(t *testing.T, v, apacheAddr, kraftdAddr string) {
	t.Helper()
	want := describeRows(runFeatures(t, v, apacheAddr, "describe"))
	got := describeRows(runFeatures(t, v, kraftdAddr, "describe"))
	for _, name := range sortedKeys(want) {
		row, k := want[name], got[name]
		if k != row && maskSupported(k) == maskSupported(row) {
			t.Logf("kafka-features %s describe, %s: the supported range differs:\nApache: %s\nkraftd: %s", v, name, row, k)
		} else if k != row {
			t.Errorf("kafka-features %s describe, %s:\nApache: %s\nkraftd: %s", v, name, row, k)
		}
	}
	for _, name := range sortedKeys(got) {
		if _, ok := want[name]; !ok {
			t.Logf("kafka-features %s describe lists %s for kraftd only (Apache %s does not know it)", v, name, v)
		}
	}
}

// compareFeaturesTool runs the line's kafka-features dry-run upgrades to
// each feature's maximum, downgrades to its minimum and unsafe downgrades
// to its minimum, all features in one command each, against both.
func compareFeaturesTool(t *testing.T, v, apacheAddr, kraftdAddr string, apacheFeatures, kraftdFeatures map[string]featureRange) {
	t.Helper()
	var up, down []string
	for _, name := range sortedKeys(apacheFeatures) {
		if uncheckedKRaftVersion(v, name) {
			continue
		}
		a, k := apacheFeatures[name], kraftdFeatures[name]
		up = append(up, "--feature", fmt.Sprintf("%s=%d", name, min(a.max, k.max)))
		down = append(down, "--feature", fmt.Sprintf("%s=%d", name, max(a.min, k.min)))
	}
	for _, args := range [][]string{
		append([]string{"upgrade", "--dry-run"}, up...),
		append([]string{"downgrade", "--dry-run"}, down...),
		append([]string{"downgrade", "--unsafe", "--dry-run"}, down...),
	} {
		want, got := runFeatures(t, v, apacheAddr, args...), runFeatures(t, v, kraftdAddr, args...)
		if olderWords(v, got) != olderWords(v, want) {
			t.Errorf("kafka-features %s %s:\nApache:\n%s\nkraftd:\n%s", v, strings.Join(args, " "), want, got)
		} else {
			t.Logf("kafka-features %s %s, both:\n%s", v, strings.Join(args, " "), want)
		}
	}
}

// describeRows splits kafka-features describe by feature, the Epoch column
// masked.
func describeRows(out string) map[string]string {
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "Feature:" {
			rows[fields[1]] = describeEpoch.ReplaceAllString(strings.Join(fields, " "), "Epoch: -")
		}
	}
	return rows
}

var supportedRange = regexp.MustCompile(`(SupportedM..Version): (UNKNOWN \d+|\S+)`)

func maskSupported(row string) string {
	return supportedRange.ReplaceAllString(row, "$1: -")
}

// Apache's words for a refused feature change moved twice, and kraftd
// uses the newest (4.2 and later):
//   - 3.9's UpdateFeatures v1 answers with each feature's error and none
//     at the top; 4.0 puts the first error at the top as "The update failed
//     for all features since the following feature had an error: ...",
//     which an old kafka-features then prints;
//   - up to 4.1 a refused metadata.version downgrade reads "Invalid
//     metadata.version 7."; from 4.2 "Unsupported metadata.version
//     downgrade from 21 to 7." (FeatureControlManager).
var (
	topLevelAnswer   = regexp.MustCompile(`^error \d+ "[^"]*"; `)
	failedForAll     = regexp.MustCompile(`The update failed for all features since the following feature had an error: `)
	mvDowngradeWords = regexp.MustCompile(`(?:Invalid metadata\.version|Unsupported metadata\.version downgrade from \d+ to) (\d+)\.`)
)

// olderWords maps both answers of a comparison with a line older than 4.2
// onto the words they share (above); 4.2 and later are compared as they
// are.
func olderWords(v, answer string) string {
	if v < "4.0" {
		answer = topLevelAnswer.ReplaceAllString(answer, "")
		answer = failedForAll.ReplaceAllString(answer, "")
	}
	if v < "4.2" {
		answer = mvDowngradeWords.ReplaceAllString(answer, "metadata.version $1 refused.")
	}
	return answer
}
