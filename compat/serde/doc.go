// Package serde holds the end-to-end tests of the gateway's schema-registry
// formats with confluent-kafka-go's own serializers
// (schemaregistry/serde/avrov2, .../protobuf, .../jsonschema): each test
// creates a Fluss table in a fresh database, starts the real gateway binary
// (internal/gatewaytest) with a route of that format against a real
// registry (internal/registrytest, Apicurio), serializes records with the
// serializer (schemas auto-registered), produces them with a
// confluent-kafka-go (librdkafka, cgo) idempotent producer with acks=all,
// and reads the rows back with pyfluss (internal/flusstest), field by field.
// Test-only: the package has no code.
package serde
