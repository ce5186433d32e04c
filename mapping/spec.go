package mapping

import "github.com/fluss-kafka/gateway/fluss"

// RouteSpec is one route as configured: which topics, which table, and how
// records become rows. cmd/gateway fills it from configs.Route; the string
// enums use the configuration file's spelling, so the copy is direct.
type RouteSpec struct {
	// Name identifies the route in errors, logs and metrics.
	Name string
	// Topic is an exact topic; Pattern a regular expression that must match
	// the whole topic. Exactly one is set.
	Topic   string
	Pattern string
	// Table is the target table.
	Table fluss.TablePath

	Value     ValueSpec
	Key       KeySpec
	Metadata  MetadataSpec
	Tombstone Tombstone
	Partition []PartitionSpec
	Errors    ErrorSpec
}

// ValueFormat is how a record value is read.
type ValueFormat string

// Value formats.
const (
	ValueRaw    ValueFormat = "raw"
	ValueString ValueFormat = "string"
	ValueJSON   ValueFormat = "json"
)

// FieldPolicy is what an unknown or a missing JSON field does.
type FieldPolicy string

// Field policies. Unknown fields: ignore or reject; missing fields: null or
// reject.
const (
	FieldIgnore FieldPolicy = "ignore"
	FieldReject FieldPolicy = "reject"
	FieldNull   FieldPolicy = "null"
)

// ValueSpec is the value mapping of a route.
type ValueSpec struct {
	// Format defaults to json.
	Format ValueFormat
	// Column receives the whole value for raw and string.
	Column string
	// Paths maps a column to its JSON path ("a.b" or "$.a.b") for json;
	// other columns read the top-level field of their own name.
	Paths map[string]string
	// UnknownFields is FieldIgnore (default) or FieldReject.
	UnknownFields FieldPolicy
	// MissingFields is FieldNull (default) or FieldReject.
	MissingFields FieldPolicy
}

// KeyFormat is how a record key is read.
type KeyFormat string

// Key formats.
const (
	KeyNone   KeyFormat = "none"
	KeyRaw    KeyFormat = "raw"
	KeyString KeyFormat = "string"
	KeyJSON   KeyFormat = "json"
)

// KeySpec is the key mapping of a route.
type KeySpec struct {
	// Format defaults to none.
	Format KeyFormat
	// Column receives the whole key for raw and string.
	Column string
	// Paths maps a column to its JSON path in the key object for json.
	// Default: each primary-key column from the top-level field of its
	// name.
	Paths map[string]string
}

// HeadersFormat is how headers are stored in one column.
type HeadersFormat string

// Header formats.
const (
	HeadersJSON HeadersFormat = "json"
	HeadersMap  HeadersFormat = "map"
)

// MetadataSpec names the columns that receive record metadata; "" means
// not stored.
type MetadataSpec struct {
	Key           string
	Headers       string
	HeadersFormat HeadersFormat // default json
	Timestamp     string
	Partition     string
	Offset        string
	Topic         string
}

// Tombstone is what a null value does.
type Tombstone string

// Tombstone policies; "" picks delete for primary-key tables and reject for
// log tables.
const (
	TombstoneAuto   Tombstone = ""
	TombstoneDelete Tombstone = "delete"
	TombstoneReject Tombstone = "reject"
)

// PartitionSource is where a partition column's value comes from.
type PartitionSource string

// Partition sources.
const (
	PartitionFromField     PartitionSource = "field"
	PartitionFromTimestamp PartitionSource = "timestamp"
)

// PartitionSpec says where one partition-key column gets its value.
type PartitionSpec struct {
	Column string
	From   PartitionSource
	// Format is the timestamp layout for PartitionFromTimestamp, in Fluss's
	// letters: yyyy, Q, MM, dd, HH, mm, ss, with '-' and '_' between.
	Format string
	// TimeZone is an IANA zone name; "" is UTC.
	TimeZone string
}

// ErrorMode is what a record that cannot be converted does.
type ErrorMode string

// Error modes.
const (
	ErrorsReject ErrorMode = "reject"
	ErrorsDLQ    ErrorMode = "dlq"
)

// ErrorSpec is a route's bad-record policy.
type ErrorSpec struct {
	// Mode defaults to reject.
	Mode ErrorMode
	// DLQTable is the dead-letter table for ErrorsDLQ.
	DLQTable fluss.TablePath
}
