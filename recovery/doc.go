// Package recovery owns offline recovery of a quorum that lost its majority
// for good (`kraftd recover`): it reads a surviving controller's metadata
// directory (kraftd's or Apache's: the formats are the same), or the
// __cluster_metadata copy a broker keeps, says what it holds and what it
// can prove committed, and rewrites it so that the node alone is the voter
// set of a dynamic quorum, in an epoch far above every epoch the lost
// quorum reached.
//
// The rewrite is one control batch appended at the new epoch (a
// KRaftVersionRecord to 1 when the quorum was static, as Apache's
// kraft.version upgrade writes, and a VotersRecord naming only this node
// under a new directory id), a quorum-state of that epoch with no leader,
// and meta.properties with the new directory id. Nothing before the log's
// end is changed or removed.
//
// It never runs beside a node: it refuses a directory whose lock a kraftd
// (flock) or Apache (fcntl) process holds, a node the newest voter set
// does not name, and it changes nothing unless Recover is called; Inspect
// only reads (but opens the directory as a start does: it cuts a torn
// tail and leaves kraftd's kraftd-log-started note).
// It imports storage and metadata and never quorum, node or server.
package recovery
