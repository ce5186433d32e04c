// Package kafkaproto holds the client-compatibility tests of the gateway's
// Kafka server (github.com/fluss-kafka/gateway/kafkaproto): sarama,
// confluent-kafka-go (librdkafka 2.11, cgo), Debian's kcat (librdkafka 2.0)
// and segmentio/kafka-go produce to a kafkaproto.Server over the in-memory
// fakes of kafkaproto/kafkatest. Test-only: the package has no code.
package kafkaproto
