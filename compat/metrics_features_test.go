package compat

import (
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// featureLevels reads kafka_server_metadataloader_finalizedlevel (Apache's
// MetadataLoader FinalizedLevel, labelled featureName by Strimzi's rules)
// as a map from the feature's tag (Apache's camel case: metadataVersion)
// to its level.
func featureLevels(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams["kafka_server_metadataloader_finalizedlevel"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "featureName" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// checkFeatureMetrics checks the values of the series a static kraftd
// quorum serves for Apache's FinalizedLevel, IgnoredStaticVoters and
// ControllerStats meters: metadata.version's level is the one
// CurrentMetadataVersion reports, kraft.version is 0 and the static voters
// are followed, and no election was unclean or from the ELR.
func checkFeatureMetrics(t *testing.T, n *metricsNode, fams map[string]*dto.MetricFamily) {
	t.Helper()
	levels := featureLevels(fams)
	mv := familyValue(fams["kafka_server_metadataloader_currentmetadataversion"])
	if levels["metadataVersion"] != mv || mv < 1 {
		t.Errorf("node %d: finalizedlevel %v, currentmetadataversion %v: want metadata.version's level there", n.ID, levels, mv)
	}
	if v, ok := levels["kraftVersion"]; !ok || v != 0 {
		t.Errorf("node %d: finalizedlevel %v: want kraft.version 0 on a static quorum", n.ID, levels)
	}
	for _, name := range []string{
		"kafka_controller_kafkacontroller_ignoredstaticvoters",
		"kafka_controller_controllerstats_uncleanleaderelections_total",
		"kafka_controller_controllerstats_electionfromeligibleleaderreplicas_total",
	} {
		if fams[name] == nil || familyValue(fams[name]) != 0 {
			t.Errorf("node %d: %s is %v, want 0 on a static quorum without partitions", n.ID, name, familyValue(fams[name]))
		}
	}
}

// compareFeatureLevels logs the FinalizedLevel series of an Apache
// controller and of a kraftd one, both formatted --standalone: kraftd
// names every feature Apache names, and kraft.version at 1 (a dynamic
// quorum). Apache added FinalizedLevel in 4.2 (KAFKA-19254): a 4.1
// controller serves none, and the check is of kraftd's alone then.
func compareFeatureLevels(t *testing.T, apacheURL, kraftdURL string) {
	t.Helper()
	apache, kraftd := featureLevels(scrapeFamilies(t, apacheURL)), featureLevels(scrapeFamilies(t, kraftdURL))
	t.Logf("FinalizedLevel: Apache %v, kraftd %v", apache, kraftd)
	for name := range apache {
		if _, ok := kraftd[name]; !ok {
			t.Errorf("kraftd's finalizedlevel names no %s, which Apache's does: %v", name, kraftd)
		}
	}
	if v, ok := apache["kraftVersion"]; ok && v != 1 {
		t.Errorf("Apache's finalizedlevel{featureName=\"kraftVersion\"} is %v, want 1", v)
	}
	if kraftd["kraftVersion"] != 1 || kraftd["metadataVersion"] < 1 {
		t.Errorf("kraftd's finalizedlevel %v: want kraft.version 1 and metadata.version", kraftd)
	}
}

// attachMetricsListeners gives every kraftd member of a mixed quorum, not
// yet started, a metrics listener on a free port, and returns their
// addresses by member.
func attachMetricsListeners(t *testing.T, members []*MixedMember) map[*MixedMember]string {
	t.Helper()
	out := map[*MixedMember]string{}
	for _, m := range members {
		if m.Kind != KindKraftd {
			continue
		}
		out[m] = Addr(FreePorts(t, 1)[0])
		appendProperty(t, m.Config(), "kraftd.metrics.listener", "http://"+out[m])
	}
	return out
}

// waitStaticVotersIgnored waits until every kraftd member serves
// IgnoredStaticVoters at want (1 once kraft.version 1 wrote a VotersRecord
// over controller.quorum.voters) and FinalizedLevel's kraft.version at
// kraftVersion.
func waitStaticVotersIgnored(t *testing.T, listeners map[*MixedMember]string, want, kraftVersion float64) {
	t.Helper()
	for m, addr := range listeners {
		Eventually(t, ReadyTimeout, fmt.Sprintf("%s: ignoredstaticvoters %v, kraft.version %v", m, want, kraftVersion), nil, func() error {
			fams := scrapeFamilies(t, "http://"+addr+"/metrics")
			got, level := familyValue(fams["kafka_controller_kafkacontroller_ignoredstaticvoters"]), featureLevels(fams)["kraftVersion"]
			if got != want || level != kraftVersion {
				return fmt.Errorf("ignoredstaticvoters %v, finalizedlevel kraft.version %v", got, level)
			}
			return nil
		})
	}
	t.Logf("%d kraftd members serve ignoredstaticvoters %v, kraft.version %v", len(listeners), want, kraftVersion)
}
