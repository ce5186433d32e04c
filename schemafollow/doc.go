// Package schemafollow owns the tables that follow their producers'
// writer schemas (docs/configuration.md, "Tables from writer schemas"):
// the columns a writer schema's fields make and the fields Fluss cannot
// add (WriterSchema), adding the missing columns as records of a new
// schema arrive (Follower, follow_schema.add_columns), the table a route's
// first record creates (Follower.CreateFrom, follow_schema.create), and
// the CREATE TABLE / ADD COLUMN that `gateway tables plan|apply` prints
// and issues (Plan, Apply).
//
// It imports fluss (the DDL), mapping (routes and the column rules) and
// schemaregistry (writer schemas); it must not import kafkaproto, the
// write path (accumulator, sender), produce or gateway. Package produce
// calls it once per stage of a batch (Needed, FollowBatch, CreateFrom,
// reading the batch through Batch) and maps its errors to Kafka's.
package schemafollow
