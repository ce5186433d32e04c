package mapping

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// RouteSpec is one route as configured: which topics, which table, and how
// records become rows. It is also the configuration file's route: the yaml
// tags are the file's keys (docs/configuration.md, package configs decodes
// routes straight into RouteSpec), and the enums use the file's spelling.
// Tables are written "database.table" (fluss.TablePath decodes them).
type RouteSpec struct {
	// Name identifies the route in errors, logs and metrics. Default: the
	// topic or the pattern.
	Name string `yaml:"name"`
	// Topic is an exact topic; Pattern a Go regular expression that must
	// match the whole topic. Exactly one is set. Pattern routes are tried in
	// order after exact routes.
	Topic   string `yaml:"topic"`
	Pattern string `yaml:"pattern"`
	// Table is the target table.
	Table fluss.TablePath `yaml:"table"`

	// Value says how the record value becomes columns.
	Value ValueSpec `yaml:"value"`
	// Key says how the record key becomes columns.
	Key KeySpec `yaml:"key"`
	// Metadata names the columns that receive Kafka record metadata.
	Metadata MetadataSpec `yaml:"metadata"`
	// Tombstone is what a null value does; TombstoneAuto decides when the
	// route is bound to its table.
	Tombstone Tombstone `yaml:"tombstone"`
	// Partition says where partition-key columns get their values; a
	// partition column not listed is filled like any other column.
	Partition []PartitionSpec `yaml:"partition"`
	// Errors is what happens to a record that cannot be converted.
	Errors ErrorSpec `yaml:"errors"`
	// ExactlyOnce says whether idempotent producers' batches are written
	// exactly once across gateway crashes and failover (sealed
	// per-producer Fluss batches and a producer-state row committed before
	// each answer; see docs/exactly-once.md). Unset: yes, when the gateway
	// can keep producer states in Fluss.
	ExactlyOnce ExactlyOnceMode `yaml:"exactly_once"`
	// FollowSchema is the shape of a table made from the route's writer
	// schema (value.subject's latest): `gateway tables plan` prints, and
	// `gateway tables apply` issues, the CREATE TABLE or ADD COLUMN it
	// needs (docs/configuration.md, "Tables from writer schemas").
	FollowSchema FollowSchemaSpec `yaml:"follow_schema"`
}

// FollowSchemaSpec is what a writer schema does not say about a table.
type FollowSchemaSpec struct {
	// Create: when the table does not exist, the gateway creates it from
	// the first record's writer schema (an exact topic's route, with
	// Buckets set: the topic's partition count until then).
	Create bool `yaml:"create"`
	// AddColumns: when a record's writer schema has top-level fields the
	// table lacks, the gateway adds them (nullable, at the end) before
	// writing the record.
	AddColumns bool `yaml:"add_columns"`
	// PrimaryKey makes a primary-key table of these columns.
	PrimaryKey []string `yaml:"primary_key"`
	// PrimaryKeyFromKey makes a primary-key table whose key is the fields
	// of the record key's writer schema (key.format avro, protobuf or
	// json_schema): each becomes a NOT NULL column, filled from the key.
	PrimaryKeyFromKey bool `yaml:"primary_key_from_key"`
	// Buckets is the bucket count; 0 leaves it to the server's default.
	Buckets int `yaml:"buckets"`
	// PartitionKeys partitions the table by these columns.
	PartitionKeys []string `yaml:"partition_keys"`
	// Properties are the table's properties ("table.*" keys).
	Properties map[string]string `yaml:"properties"`
}

// ExactlyOnceMode is a route's exactly_once setting, as written in YAML.
type ExactlyOnceMode string

// Exactly-once settings.
const (
	// ExactlyOnceDefault (unset): exactly once when the producer-state
	// table can be used, else the merged path with a logged error.
	ExactlyOnceDefault ExactlyOnceMode = ""
	// ExactlyOnceOn: exactly once or no route (the gateway refuses to
	// load when the producer-state table cannot be used).
	ExactlyOnceOn ExactlyOnceMode = "true"
	// ExactlyOnceOff: the merged path, at least once across crashes.
	ExactlyOnceOff ExactlyOnceMode = "false"
)

// ValueFormat is how a record value is read.
type ValueFormat string

// Value formats.
const (
	ValueRaw    ValueFormat = "raw"
	ValueString ValueFormat = "string"
	ValueJSON   ValueFormat = "json"
	// Schema-registry formats: the value carries (in its first bytes or a
	// header) the id of its writer schema in a registry; fields fill
	// columns by name, as for json.
	ValueAvro       ValueFormat = "avro"
	ValueProtobuf   ValueFormat = "protobuf"
	ValueJSONSchema ValueFormat = "json_schema"
	// ValueConnectJSON is Kafka Connect's JsonConverter with
	// schemas.enable=true: {"schema": ..., "payload": ...}; the payload
	// fills columns as a json value does, a null payload is a tombstone.
	ValueConnectJSON ValueFormat = "connect_json"
)

// FieldPolicy is what an unknown or a missing JSON field does.
type FieldPolicy string

// Field policies. Unknown fields: ignore or reject; missing fields: null or
// reject.
const (
	FieldIgnore FieldPolicy = "ignore"
	FieldReject FieldPolicy = "reject"
	FieldNull   FieldPolicy = "null"
	FieldAllow  FieldPolicy = "allow"
)

// ValueSpec is the value mapping of a route.
type ValueSpec struct {
	// Format defaults to json.
	Format ValueFormat `yaml:"format"`
	// Column receives the whole value for raw and string.
	Column string `yaml:"column"`
	// Paths maps a column to its JSON path ("a.b" or "$.a.b") for json;
	// other columns read the top-level field of their own name. YAML key
	// "columns".
	Paths map[string]string `yaml:"columns"`
	// UnknownFields is FieldIgnore (default) or FieldReject.
	UnknownFields FieldPolicy `yaml:"unknown_fields"`
	// MissingFields is FieldNull (default) or FieldReject; NOT NULL columns
	// always reject.
	MissingFields FieldPolicy `yaml:"missing_fields"`
	// EmptyRows is what a value that fills none of the columns read from
	// it does: FieldReject (default; a bad record whose reason names the
	// fields it had) or FieldAllow (a row of nulls there). Formats that
	// fill columns by name only.
	EmptyRows FieldPolicy `yaml:"empty_rows"`
	// Framing is how a schema-registry format's producers mark the schema
	// (FramingConfluent by default); only for avro, protobuf, json_schema.
	Framing Framing `yaml:"framing"`
	// Subject is the registry subject whose latest schema `gateway
	// validate` checks the route against; optional, registry formats only.
	Subject string `yaml:"subject"`
	// Message is the Protobuf message the records are (its full name,
	// e.g. shop.Event), for what has no record to tell: `gateway tables
	// plan|apply` and `gateway validate` with a .proto file of several
	// messages. Each record's own framing (message indexes, Apicurio's
	// type name) decides for the record. Protobuf only.
	Message string `yaml:"message"`
}

// KeyFormat is how a record key is read.
type KeyFormat string

// Key formats.
const (
	KeyNone   KeyFormat = "none"
	KeyRaw    KeyFormat = "raw"
	KeyString KeyFormat = "string"
	KeyJSON   KeyFormat = "json"
	// Schema-registry formats, as for values.
	KeyAvro       KeyFormat = "avro"
	KeyProtobuf   KeyFormat = "protobuf"
	KeyJSONSchema KeyFormat = "json_schema"
)

// KeySpec is the key mapping of a route.
type KeySpec struct {
	// Format defaults to none.
	Format KeyFormat `yaml:"format"`
	// Column receives the whole key for raw and string.
	Column string `yaml:"column"`
	// Paths maps a column to its JSON path in the key object for json.
	// Default: each primary-key column from the top-level field of its
	// name. YAML key "columns".
	Paths map[string]string `yaml:"columns"`
	// Framing, Subject and Message as for the value.
	Framing Framing `yaml:"framing"`
	Subject string  `yaml:"subject"`
	Message string  `yaml:"message"`
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
	// Key receives the raw record key (BYTES or STRING column).
	Key string `yaml:"key"`
	// Headers receives the record headers.
	Headers string `yaml:"headers"`
	// HeadersFormat defaults to json.
	HeadersFormat HeadersFormat `yaml:"headers_format"`
	// Timestamp receives the record timestamp (TIMESTAMP_LTZ, TIMESTAMP or
	// BIGINT epoch milliseconds).
	Timestamp string `yaml:"timestamp"`
	// Partition receives the Kafka partition (INT or BIGINT).
	Partition string `yaml:"partition"`
	// Offset receives the record's offset in its produce batch (BIGINT).
	Offset string `yaml:"offset"`
	// Topic receives the topic name (STRING).
	Topic string `yaml:"topic"`
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
	// Column is the partition-key column.
	Column string `yaml:"column"`
	// From defaults to PartitionFromTimestamp when Format is set, else
	// PartitionFromField.
	From PartitionSource `yaml:"from"`
	// Format is the timestamp layout for PartitionFromTimestamp, in Fluss's
	// letters: yyyy, Q, MM, dd, HH, mm, ss, with '-' and '_' between.
	Format string `yaml:"format"`
	// TimeZone is an IANA zone name for PartitionFromTimestamp. Default
	// UTC.
	TimeZone string `yaml:"time_zone"`
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
	Mode ErrorMode `yaml:"mode"`
	// DLQTable is the dead-letter table for ErrorsDLQ.
	DLQTable fluss.TablePath `yaml:"dlq_table"`
}

// WithDefaults returns the spec with every default filled in: the name
// (the topic, else the pattern), value json with unknown fields ignored and
// missing fields null, key none, headers json, each partition column's
// source (timestamp when it has a format, else field) and a timestamp
// column's zone (UTC), and error mode reject. Tombstone stays
// TombstoneAuto. The result shares no map or slice with s. NewRoutes and
// ValidateSpecs apply it; applying it twice changes nothing.
func (s RouteSpec) WithDefaults() RouteSpec {
	if s.Name == "" {
		s.Name = s.Topic
		if s.Name == "" {
			s.Name = s.Pattern
		}
	}
	if s.Value.Format == "" {
		s.Value.Format = ValueJSON
	}
	if s.Value.UnknownFields == "" {
		s.Value.UnknownFields = FieldIgnore
	}
	if s.Value.MissingFields == "" {
		s.Value.MissingFields = FieldNull
	}
	if s.Value.EmptyRows == "" {
		s.Value.EmptyRows = FieldReject
	}
	if s.Key.Format == "" {
		s.Key.Format = KeyNone
	}
	if s.Metadata.HeadersFormat == "" {
		s.Metadata.HeadersFormat = HeadersJSON
	}
	// The spec is kept; copy the maps and slices so the caller's later
	// changes cannot reach it.
	s.Value.Paths = cloneMap(s.Value.Paths)
	s.Key.Paths = cloneMap(s.Key.Paths)
	s.Partition = slices.Clone(s.Partition)
	s.FollowSchema.PrimaryKey = slices.Clone(s.FollowSchema.PrimaryKey)
	s.FollowSchema.PartitionKeys = slices.Clone(s.FollowSchema.PartitionKeys)
	s.FollowSchema.Properties = cloneMap(s.FollowSchema.Properties)
	for i := range s.Partition {
		p := &s.Partition[i]
		if p.From == "" {
			p.From = PartitionFromField
			if p.Format != "" {
				p.From = PartitionFromTimestamp
			}
		}
		if p.From == PartitionFromTimestamp && p.TimeZone == "" {
			p.TimeZone = "UTC"
		}
	}
	if s.Errors.Mode == "" {
		s.Errors.Mode = ErrorsReject
	}
	return s
}

// SpecError is a problem with a route spec found without looking at
// tables (ValidateSpecs, NewRoutes). Field is the key path inside the route
// as the configuration file spells it ("value.format",
// "partition[0].time_zone"), or "" for the route as a whole; package
// configs prefixes it with "routes[<Index>] (<Route>)".
type SpecError struct {
	// Index is the route's position in the list checked.
	Index int
	// Route is the route's name, defaults applied.
	Route string
	// Field is the key path inside the route, or "".
	Field string
	// Problem says what is wrong.
	Problem string
}

func (e *SpecError) Error() string {
	s := "route " + strconv.Quote(e.Route) + ": "
	if e.Field != "" {
		s += e.Field + ": "
	}
	return s + e.Problem
}

// ValidateSpecs checks route specs on their own and against each other,
// after WithDefaults: exactly one of topic (a valid Kafka topic name) and
// pattern (a valid regular expression), unique names, topics and patterns,
// valid tables, known enum values, the columns each format needs or
// forbids, JSON paths, timestamp formats and zones, and that a column is
// filled from one place. It returns every problem, joined; each is a
// *SpecError. It is pure: the tables themselves are checked by Validate.
func ValidateSpecs(specs []RouteSpec) error {
	var errs []error
	names := map[string]int{}
	topics := map[string]int{}
	patterns := map[string]int{}
	for i := range specs {
		s := specs[i].WithDefaults()
		add := func(field, format string, args ...any) {
			errs = append(errs, &SpecError{Index: i, Route: s.Name, Field: field, Problem: fmt.Sprintf(format, args...)})
		}
		if j, ok := names[s.Name]; ok {
			add("name", "duplicate of routes[%d]", j)
		}
		names[s.Name] = i
		switch {
		case s.Topic == "" && s.Pattern == "":
			add("", "one of topic and pattern is required")
		case s.Topic != "" && s.Pattern != "":
			add("", "topic and pattern are mutually exclusive")
		case s.Topic != "":
			if j, ok := topics[s.Topic]; ok {
				add("topic", "%q is also routed by routes[%d]", s.Topic, j)
			}
			topics[s.Topic] = i
			if !validTopic(s.Topic) {
				add("topic", "%q is not a valid Kafka topic name", s.Topic)
			}
		default:
			if _, err := regexp.Compile(s.Pattern); err != nil {
				add("pattern", "%v", err)
			}
			if j, ok := patterns[s.Pattern]; ok {
				add("pattern", "%q is also used by routes[%d]", s.Pattern, j)
			}
			patterns[s.Pattern] = i
		}
		s.check(add)
	}
	return errors.Join(errs...)
}

// check reports the problems of one spec (defaults applied) through add.
func (s *RouteSpec) check(add func(field, format string, args ...any)) {
	checkTable := func(field string, t fluss.TablePath) {
		if t == (fluss.TablePath{}) {
			add(field, "required (database.table)")
		} else if err := t.Validate(); err != nil {
			add(field, "%v", err)
		}
	}
	checkTable("table", s.Table)

	v := s.Value
	switch v.Format {
	case ValueRaw, ValueString:
		if v.Column == "" {
			add("value.column", "required for value.format %s", v.Format)
		}
		if len(v.Paths) > 0 {
			add("value.columns", "only applies to value.format json, connect_json, avro, protobuf and json_schema")
		}
	case ValueJSON, ValueConnectJSON, ValueAvro, ValueProtobuf, ValueJSONSchema:
		if v.Column != "" {
			add("value.column", "only applies to value.format raw and string; %s fills columns by name", v.Format)
		}
		for _, col := range sortedKeys(v.Paths) {
			if _, err := splitPath(v.Paths[col]); err != nil {
				add("value.columns."+col, "%v", err)
			}
		}
	default:
		add("value.format", "%q is not one of raw, string, json, connect_json, avro, protobuf, json_schema", v.Format)
	}
	checkRegistry("value", string(v.Format), v.Framing, v.Subject, add)
	if v.UnknownFields != FieldIgnore && v.UnknownFields != FieldReject {
		add("value.unknown_fields", "%q is not one of ignore, reject", v.UnknownFields)
	}
	if v.MissingFields != FieldNull && v.MissingFields != FieldReject {
		add("value.missing_fields", "%q is not one of null, reject", v.MissingFields)
	}
	if fs := s.FollowSchema; fs.Create || fs.AddColumns {
		if !IsRegistryFormat(string(v.Format)) && v.Format != ValueConnectJSON {
			add("follow_schema", "needs a value format with a writer schema (avro, protobuf, json_schema, connect_json), not %s", v.Format)
		}
		if fs.Create && s.Topic == "" {
			add("follow_schema.create", "needs an exact topic: a pattern route's topics are not known before their records")
		}
		if fs.Create && fs.Buckets < 1 {
			add("follow_schema.buckets", "must be set (at least 1) with create: it is the topic's partition count before the table exists")
		}
	}
	if fs := s.FollowSchema; fs.PrimaryKeyFromKey {
		if !IsRegistryFormat(string(s.Key.Format)) {
			add("follow_schema.primary_key_from_key", "needs a key format with a writer schema (avro, protobuf, json_schema), not %s", s.Key.Format)
		}
		if len(fs.PrimaryKey) > 0 {
			add("follow_schema.primary_key_from_key", "and follow_schema.primary_key both name the key: set one")
		}
	}
	if v.Message != "" && v.Format != ValueProtobuf {
		add("value.message", "only applies to value.format protobuf")
	}
	if s.Key.Message != "" && s.Key.Format != KeyProtobuf {
		add("key.message", "only applies to key.format protobuf")
	}
	if v.EmptyRows != FieldReject && v.EmptyRows != FieldAllow {
		add("value.empty_rows", "%q is not one of reject, allow", v.EmptyRows)
	}

	k := s.Key
	switch k.Format {
	case KeyNone:
		if k.Column != "" || len(k.Paths) > 0 {
			add("key", "column/columns set but key.format is none")
		}
	case KeyRaw, KeyString:
		if k.Column == "" {
			add("key.column", "required for key.format %s", k.Format)
		}
		if len(k.Paths) > 0 {
			add("key.columns", "only applies to key.format json, avro, protobuf and json_schema")
		}
	case KeyJSON, KeyAvro, KeyProtobuf, KeyJSONSchema:
		if k.Column != "" {
			add("key.column", "only applies to key.format raw and string; %s fills columns by name", k.Format)
		}
		for _, col := range sortedKeys(k.Paths) {
			if _, err := splitPath(k.Paths[col]); err != nil {
				add("key.columns."+col, "%v", err)
			}
		}
	default:
		add("key.format", "%q is not one of none, raw, string, json, avro, protobuf, json_schema", k.Format)
	}
	checkRegistry("key", string(k.Format), k.Framing, k.Subject, add)

	m := s.Metadata
	if m.HeadersFormat != HeadersJSON && m.HeadersFormat != HeadersMap {
		add("metadata.headers_format", "%q is not one of json, map", m.HeadersFormat)
	}
	// A column is filled from one place only (a JSON key may overlap the
	// JSON value; Validate checks that against the table).
	owners := map[string]string{}
	claim := func(field, col string) {
		if col == "" {
			return
		}
		if prev, ok := owners[col]; ok {
			add(field, "column %q is already filled by %s", col, prev)
			return
		}
		owners[col] = field
	}
	claim("metadata.key", m.Key)
	claim("metadata.headers", m.Headers)
	claim("metadata.timestamp", m.Timestamp)
	claim("metadata.partition", m.Partition)
	claim("metadata.offset", m.Offset)
	claim("metadata.topic", m.Topic)
	if v.Format == ValueRaw || v.Format == ValueString {
		claim("value.column", v.Column)
	}
	if k.Format == KeyRaw || k.Format == KeyString {
		claim("key.column", k.Column)
	}

	switch s.Tombstone {
	case TombstoneAuto, TombstoneDelete, TombstoneReject:
	default:
		add("tombstone", "%q is not one of delete, reject", s.Tombstone)
	}
	switch s.ExactlyOnce {
	case ExactlyOnceDefault, ExactlyOnceOn, ExactlyOnceOff:
	default:
		add("exactly_once", "%q is not one of true, false", s.ExactlyOnce)
	}

	seen := map[string]bool{}
	for i, p := range s.Partition {
		field := fmt.Sprintf("partition[%d]", i)
		if p.Column == "" {
			add(field+".column", "required")
		} else if seen[p.Column] {
			add(field+".column", "%q listed twice", p.Column)
		}
		seen[p.Column] = true
		switch p.From {
		case PartitionFromField:
			if p.Format != "" || p.TimeZone != "" {
				add(field, "format and time_zone only apply to from: timestamp")
			}
		case PartitionFromTimestamp:
			if p.Format == "" {
				add(field+".format", "required for from: timestamp (e.g. yyyyMMdd)")
			} else if _, err := parseTimeFormat(p.Format); err != nil {
				add(field+".format", "%v", err)
			}
			if _, err := time.LoadLocation(p.TimeZone); err != nil {
				add(field+".time_zone", "%v", err)
			}
			claim(field, p.Column)
		default:
			add(field+".from", "%q is not one of field, timestamp", p.From)
		}
	}

	switch s.Errors.Mode {
	case ErrorsReject:
		if s.Errors.DLQTable != (fluss.TablePath{}) {
			add("errors.dlq_table", "only applies to errors.mode dlq")
		}
	case ErrorsDLQ:
		if s.Errors.DLQTable == (fluss.TablePath{}) {
			add("errors.dlq_table", "required for errors.mode dlq")
			break
		}
		checkTable("errors.dlq_table", s.Errors.DLQTable)
		if s.Errors.DLQTable == s.Table {
			add("errors.dlq_table", "must differ from the route's table %q", s.Table.String())
		}
	default:
		add("errors.mode", "%q is not one of reject, dlq", s.Errors.Mode)
	}
}

// validTopic applies Kafka's topic rule: 1 to 249 of [A-Za-z0-9._-], not
// "." or "..".
func validTopic(s string) bool {
	if len(s) == 0 || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
