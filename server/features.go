package server

// FeatureRange is the inclusive range of levels kraftd supports for one feature.
type FeatureRange struct {
	Name     string
	Min, Max int16
}

// SupportedFeatures are the feature ranges kraftd advertises in ApiVersions
// and registers as a controller. They match an Apache 4.1 controller, so
// either implementation can finalize any level the other accepts.
var SupportedFeatures = []FeatureRange{
	{"eligible.leader.replicas.version", 0, 1},
	{"group.version", 0, 1},
	{"kraft.version", 0, 1},
	{"metadata.version", 7, 27},
	{"share.version", 0, 1},
	{"transaction.version", 0, 2},
}
