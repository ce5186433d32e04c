// Package mapping turns Kafka records into Fluss rows: it resolves a topic to
// its route (database.table and conversion rules), converts keys, values and
// metadata into columns, and chooses the Fluss bucket.
package mapping
