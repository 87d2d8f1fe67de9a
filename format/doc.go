// Package format builds what `kraftd format` writes into a node's
// directories, as Apache's Formatter and ScramParser do: the bootstrap
// records (metadata.version, the other features' levels, SCRAM
// credentials), the initial voter set of a dynamic quorum, and each
// directory formatted through storage (Dir). It also holds the rules by
// which a controller that already answers at an address the node names
// refuses the format (Targets, CheckAnswers): a second quorum beside a
// running one, or a node that could never join the cluster it names.
//
// It owns the rules of the format command's flags: its errors name the
// flag they concern (--feature, --add-scram, --initial-controllers) and
// are operator mistakes, on which cmd/kraftd exits 2. It never reads a
// properties file or asks the network; cmd/kraftd does, and passes what it
// found.
package format
