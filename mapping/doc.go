// Package mapping turns Kafka records into Fluss rows: it resolves a topic to
// its route (database.table and conversion rules), converts keys, values and
// metadata into columns, and chooses the partition and the Fluss bucket.
//
// # Flow
//
// The configuration file decodes straight into []RouteSpec (package configs),
// and the gateway compiles them with NewRoutes (no I/O). It fetches the TableInfo of every table in
// Routes.Tables from Fluss and calls Routes.Bind, which checks each route
// against its table (Validate) and returns a new Routes whose routes carry a
// Converter (and a DLQ builder in dlq mode). The Kafka front resolves a
// topic with Routes.Resolve and converts each record (its own types turned
// into a Record) with Converter.Convert into a reusable Converted: the
// operation (append, upsert, delete), the row, the encoded primary key, the
// partition name and the bucket. A record that cannot be converted yields a
// *RecordError (errors.Is ErrInvalidRecord) carrying its batch index and
// reason; in dlq mode, DLQ.Build makes the dead-letter row instead.
//
// # Buckets
//
// Tables with a bucket key (every primary-key table) get the bucket Fluss
// computes from the row's bucket key (fluss.NewKeyEncoder and
// fluss.BucketForKey); the producer's partition is never trusted for them.
// Log tables without a bucket key keep Kafka partition = Fluss bucket,
// modulo the bucket count.
//
// # Concurrency and ownership
//
// Routes, Route, Converter and DLQ are immutable once built and safe for
// concurrent use; a new configuration is a new Routes (copy-on-write
// snapshot, swap the pointer). A Converted belongs to one goroutine; its row
// aliases the record's key and value and its own buffers until the next
// Convert into it (see Converted).
//
// The JSON path is a single-pass scanner over the value that allocates
// nothing per record once a Converted is warm (TestConvertJSONAllocs,
// BenchmarkConvertJSON).
//
// The package starts no goroutines and does no I/O. It imports fluss only
// (the layer below it); never kafkaproto, writer, configs or the gateway.
package mapping
