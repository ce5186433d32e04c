// Package gateway is the Kafka-compatible producer gateway's wiring and
// lifetime: Gateway (server.go) builds the Fluss client, the accumulator
// and its sender, the produce path (package produce), the transaction
// coordinator, the Kafka listeners and the admin server (/metrics, /livez,
// /readyz) from a configs.Config (settingsFrom is the one place that turns
// the file into the components' configs); binds routes to tables
// (tables.go), reloads them (reload.go) and shuts down in order. The
// listeners serve a backend (backend.go): the produce path, the
// transaction coordinator and the ACLs in force; the client quotas
// (package quota) are shared by the listeners and swapped at reload. The
// listeners' SASL credentials files are opened, watched and reloaded in
// credentials.go, which also makes the OAUTHBEARER token validators
// (package jwtauth) and keeps their keys fresh.
//
// The transaction coordinator is package transactions'; the gateway
// builds it, hands it the produce path and runs its sweeper.
// `gateway tables plan|apply` is wired to the configuration in
// tables_plan.go (package schemafollow does the work). cmd/gateway only
// parses flags, loads the file and turns signals into calls.
//
// Imports point down: gateway may import transactions, produce,
// producerstate, schemafollow, acl, credentials, jwtauth, quota, outage, backoff,
// kafkaproto, mapping, accumulator, sender, schemaregistry, fluss and
// configs; none of them imports gateway, and no product package imports a
// dev package (tools, test helpers).
package gateway
