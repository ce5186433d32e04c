// Package kafkaproto serves the producer side of the Kafka protocol: the TCP
// listener, request framing, one handler per API key, SASL, and decoding of
// record batches in every codec. Decoded records are handed to a Sink; the
// package knows nothing of Fluss.
package kafkaproto
