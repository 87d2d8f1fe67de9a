package controller

import (
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientMetricsKeys are ClientMetricsConfigs' keys in definition order.
var clientMetricsKeys = []struct {
	name string
	typ  kmsg.ConfigType
	def  string
}{
	{"metrics", typeList, ""},
	{"interval.ms", typeInt, "300000"},
	{"match", typeList, ""},
}

func isClientMetricsKey(name string) bool {
	for _, k := range clientMetricsKeys {
		if k.name == name {
			return true
		}
	}
	return false
}

// clientMatchParams are the client properties a match pattern may name.
var clientMatchParams = []string{"client_instance_id", "client_id", "client_software_name",
	"client_software_version", "client_source_address", "client_source_port"}

// validateClientMetricsConfigs checks a client metrics subscription's whole
// config after a change, as Apache's ClientMetricsConfigs.validate does:
// unknown keys and a push interval out of range are INVALID_REQUEST, the
// rest INVALID_CONFIG. configs holds no null values.
func validateClientMetricsConfigs(name string, configs map[string]string, line int) *Error {
	if name == "" {
		return apiErr(kerr.InvalidRequest.Code, "Subscription name can't be empty")
	}
	for _, k := range sortedKeys(configs) {
		if !isClientMetricsKey(k) {
			return apiErr(kerr.InvalidRequest.Code, "Unknown client metrics configuration: %s", k)
		}
	}
	for _, k := range clientMetricsKeys {
		v, set := configs[k.name]
		if !set {
			continue
		}
		n, err := parseConfigValue(k.name, v, k.typ, nil)
		if err != nil {
			return err
		}
		if k.typ == typeList {
			if err := nonEmptyItems(k.name, v, line); err != nil {
				return err
			}
		}
		if k.name == "interval.ms" && (n < 100 || n > 3600000) {
			return apiErr(kerr.InvalidRequest.Code, "Invalid value %d for interval.ms, interval must be between 100 and 3600000 (1 hour)", n)
		}
	}
	if v, set := configs["match"]; set {
		for _, pattern := range javaList(v) {
			if !validMatchPattern(pattern) {
				return apiErr(kerr.InvalidConfig.Code, "Illegal client matching pattern: %s", pattern)
			}
		}
	}
	return nil
}

// validMatchPattern: "<param>=<regular expression>", split as Java's
// String.split("=") does (trailing empty parts dropped, so "client_id="
// is one part), with a known param. The expression is compiled as Go's
// RE2: a Java-only construct (look-around, possessive quantifiers,
// back-references) is refused where Apache would accept it.
func validMatchPattern(pattern string) bool {
	parts := strings.Split(pattern, "=")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 2 || !slices.Contains(clientMatchParams, strings.TrimSpace(parts[0])) {
		return false
	}
	_, err := regexp.Compile(strings.TrimSpace(parts[1]))
	return err == nil
}
