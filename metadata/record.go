package metadata

// Record is a metadata record of the __cluster_metadata log: one of the
// generated *XxxRecord types. Version is the schema version the record is
// encoded at; it travels in the value frame (see EncodeValue).
type Record interface {
	// Key is the record's apiKey, e.g. 2 for TopicRecord.
	Key() int16
	// MaxVersion is the newest schema version this package knows.
	MaxVersion() int16
	GetVersion() int16
	SetVersion(int16)
	// AppendTo appends the body encoded at the record's version. The
	// version must be in 0..MaxVersion; fields the version lacks are not
	// written.
	AppendTo(dst []byte) []byte
	// ReadFrom replaces the record's fields with the body decoded at its
	// version. It returns a *DecodeError on bad input and does not check for
	// trailing bytes (DecodeValue does).
	ReadFrom(src []byte) error
	// Default sets every field to its schema default.
	Default()
}

// ControlValue is the value of a KRaft control record: one of the generated
// LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord,
// KRaftVersionRecord and VotersRecord types. Its methods mean what they do
// on Record; ControlType replaces Key.
type ControlValue interface {
	// ControlType is the type written in the control record key, e.g. 3
	// for SnapshotHeaderRecord.
	ControlType() int16
	MaxVersion() int16
	GetVersion() int16
	SetVersion(int16)
	AppendTo(dst []byte) []byte
	ReadFrom(src []byte) error
	Default()
}
