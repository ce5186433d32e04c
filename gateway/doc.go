// Package gateway is the Kafka-compatible producer gateway: it owns the
// bridge from the Kafka front (kafkaproto) to the Fluss write path (the
// accumulator, which the sender drains over the fluss client), and the
// lifetime of every component.
//
// The bridge (bridge.go) is the one kafkaproto.Backend: it answers Metadata
// from the bound routes, hands out producer ids from Fluss InitWriter, and
// for each Produce partition resolves the topic's route, prepares the
// batch (prepare.go, the one pipeline of every path: registry framings and
// writer schemas, schema following, conversion into rows by mapping),
// sends rows that do not convert to the
// route's dead-letter table or rejects their batch with record_errors,
// resolves Fluss partitions (partitions.go: off the connection's read
// goroutine when a partition must be looked up or created, queued per
// Kafka partition so order holds), appends the rows, and turns the Fluss
// acks into the Kafka answer (package answer holds the one Fluss → Kafka
// error table).
//
// Gateway (server.go) wires the Fluss client, the accumulator and its
// sender, the bridge, the
// Kafka listeners and the admin server (/metrics, /livez, /readyz) from a
// configs.Config (settingsFrom is the one place that turns the file into
// the components' configs); binds routes to tables (tables.go), reloads
// them (reload.go; a table whose columns were added gets a writer table of
// the new schema) and shuts down in order. The gateway's own tables
// (producer states: package producerstate; transactions, staged batches)
// each embed an owntable.Table: created when missing, checked, registered
// with the writer. Tables that follow writer schemas are package schemafollow's;
// schema_follow.go is the produce path's side (which writer schemas a
// batch names, following them before it converts, holding a batch whose
// table its first record creates), tables_plan.go wires `gateway tables
// plan|apply` to the configuration. cmd/gateway
// only parses flags, loads the file and turns signals into calls.
//
// Imports point down: gateway may import kafkaproto, mapping, accumulator,
// sender, schemaregistry, fluss, configs, acl (the topic ACLs its listeners
// authorize with), schemafollow, answer, owntable, producerstate and
// backoff; none of them imports gateway, and no product package
// imports a dev package (tools, test helpers).
package gateway
