// Package quota holds client quotas with Kafka's semantics: a
// producer_byte_rate per entity (a principal, a client id, or a
// (principal, client id) pair), the rate measured over sampled windows as
// Kafka's sensors do (Config: 11 samples of 1 s), and the throttle time a
// broker gives a client that exceeds it. kafkaproto enforces it (it answers
// with throttle_time_ms and mutes the connection); the gateway builds
// [Quotas] from the configuration and swaps its [Limits] at reload.
//
// Quotas are per instance, as Kafka's are per broker. The package imports
// nothing of the module.
package quota
