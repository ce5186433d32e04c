package configs

// Route maps one Kafka topic, or every topic matching a pattern, to one
// Fluss table, and says how records become rows.
type Route struct {
	// Name identifies the route in errors, logs and metrics. Default: the
	// topic or the pattern.
	Name string `yaml:"name"`
	// Topic is an exact topic name. Exactly one of Topic and Pattern is set.
	Topic string `yaml:"topic"`
	// Pattern is a Go regular expression that must match the whole topic
	// name. Pattern routes are tried in file order after exact routes.
	Pattern string `yaml:"pattern"`
	// Table is the target, "database.table".
	Table string `yaml:"table"`
	// Value says how the record value becomes columns.
	Value Value `yaml:"value"`
	// Key says how the record key becomes columns.
	Key Key `yaml:"key"`
	// Metadata names the columns that receive Kafka record metadata.
	Metadata Metadata `yaml:"metadata"`
	// Tombstone is what a null value does: "delete" (primary-key tables
	// only) or "reject". Default: delete for primary-key tables, reject for
	// log tables (decided when the route is bound to its table).
	Tombstone string `yaml:"tombstone"`
	// Partition says where partition-key columns get their values; a
	// partition column not listed here is filled like any other column.
	Partition []PartitionColumn `yaml:"partition"`
	// Errors is what happens to a record that cannot be converted.
	Errors Errors `yaml:"errors"`
}

// Value formats.
const (
	ValueRaw    = "raw"
	ValueString = "string"
	ValueJSON   = "json"
)

// Field policies.
const (
	UnknownIgnore = "ignore"
	UnknownReject = "reject"
	MissingNull   = "null"
	MissingReject = "reject"
)

// Value is the value mapping of a route.
type Value struct {
	// Format is raw (bytes into Column), string (UTF-8 text into Column) or
	// json (an object whose fields fill columns by name). Default json.
	Format string `yaml:"format"`
	// Column receives the value for raw and string.
	Column string `yaml:"column"`
	// Columns overrides, for json, where a column's value is found: column
	// name -> JSON path ("a.b.c" or "$.a.b.c", object keys only). Columns
	// not listed are read from the top-level field of the same name.
	Columns map[string]string `yaml:"columns"`
	// UnknownFields is ignore or reject: what a JSON field that no column
	// reads does. Default ignore.
	UnknownFields string `yaml:"unknown_fields"`
	// MissingFields is null or reject: what a column whose field is absent
	// gets. Default null (NOT NULL columns always reject).
	MissingFields string `yaml:"missing_fields"`
}

// Key formats.
const (
	KeyNone   = "none"
	KeyRaw    = "raw"
	KeyString = "string"
	KeyJSON   = "json"
)

// Key is the key mapping of a route.
type Key struct {
	// Format is none (the key is not mapped), raw (bytes into Column),
	// string (UTF-8 text into Column) or json (an object whose fields fill
	// columns by name, normally the primary key). Default none.
	Format string `yaml:"format"`
	// Column receives the key for raw and string.
	Column string `yaml:"column"`
	// Columns overrides, for json, where a column's value is found in the
	// key object: column name -> JSON path. Default: the primary-key
	// columns, each from the top-level field of its name.
	Columns map[string]string `yaml:"columns"`
}

// Header formats.
const (
	HeadersJSON = "json"
	HeadersMap  = "map"
)

// Metadata names the columns that receive Kafka record metadata; an empty
// name means "not stored".
type Metadata struct {
	// Key receives the raw record key (BYTES or STRING column).
	Key string `yaml:"key"`
	// Headers receives the record headers.
	Headers string `yaml:"headers"`
	// HeadersFormat is json (a JSON object string) or map (a MAP column).
	// Default json.
	HeadersFormat string `yaml:"headers_format"`
	// Timestamp receives the record timestamp (TIMESTAMP_LTZ, TIMESTAMP or
	// BIGINT epoch milliseconds).
	Timestamp string `yaml:"timestamp"`
	// Partition receives the Kafka partition (INT or BIGINT).
	Partition string `yaml:"partition"`
	// Offset receives the record's offset in its produce batch (BIGINT).
	Offset string `yaml:"offset"`
	// Topic receives the topic name (STRING), useful for pattern routes.
	Topic string `yaml:"topic"`
}

// Tombstone policies.
const (
	TombstoneDelete = "delete"
	TombstoneReject = "reject"
)

// Partition value sources.
const (
	PartitionFromField     = "field"
	PartitionFromTimestamp = "timestamp"
)

// PartitionColumn says where one partition-key column gets its value.
type PartitionColumn struct {
	// Column is the partition-key column.
	Column string `yaml:"column"`
	// From is field (the column is filled from the value like any other)
	// or timestamp (the record timestamp formatted with Format). Default:
	// timestamp when Format is set, else field.
	From string `yaml:"from"`
	// Format is the time layout for From=timestamp, with the letters of
	// Fluss auto-partitioning: yyyy, Q, MM, dd, HH, mm, ss; other
	// characters may be '-' and '_'. Examples: yyyyMMdd, yyyyMMddHH.
	Format string `yaml:"format"`
	// TimeZone is the IANA zone the timestamp is formatted in. Default UTC.
	TimeZone string `yaml:"time_zone"`
}

// Error modes.
const (
	ErrorsReject = "reject"
	ErrorsDLQ    = "dlq"
)

// Errors is a route's policy for records that cannot be converted.
type Errors struct {
	// Mode is reject (the producer gets INVALID_RECORD naming the record)
	// or dlq (the raw record and the reason go to DLQTable and the produce
	// succeeds). Default reject.
	Mode string `yaml:"mode"`
	// DLQTable is "database.table" of the dead-letter table (mode dlq).
	DLQTable string `yaml:"dlq_table"`
}

func (r *Route) fillDefaults() {
	if r.Name == "" {
		if r.Topic != "" {
			r.Name = r.Topic
		} else {
			r.Name = r.Pattern
		}
	}
	if r.Value.Format == "" {
		r.Value.Format = ValueJSON
	}
	if r.Value.UnknownFields == "" {
		r.Value.UnknownFields = UnknownIgnore
	}
	if r.Value.MissingFields == "" {
		r.Value.MissingFields = MissingNull
	}
	if r.Key.Format == "" {
		r.Key.Format = KeyNone
	}
	if r.Metadata.HeadersFormat == "" {
		r.Metadata.HeadersFormat = HeadersJSON
	}
	for i := range r.Partition {
		p := &r.Partition[i]
		if p.From == "" {
			if p.Format != "" {
				p.From = PartitionFromTimestamp
			} else {
				p.From = PartitionFromField
			}
		}
		if p.From == PartitionFromTimestamp && p.TimeZone == "" {
			p.TimeZone = "UTC"
		}
	}
	if r.Errors.Mode == "" {
		r.Errors.Mode = ErrorsReject
	}
}
