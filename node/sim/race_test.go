//go:build race

package sim

// raceBuild: the race detector slows a seed about tenfold, so a race build
// runs fewer seeds by default; `make test` runs the many in a plain build.
const raceBuild = true
