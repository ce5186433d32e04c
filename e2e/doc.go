// Package e2e holds the end-to-end tests of the gateway: the real gateway
// binary (built with -race) in front of a real Fluss cluster
// (internal/flusstest), fed by unmodified Kafka producers (franz-go, kcat),
// with every row read back out of Fluss by an independent client (pyfluss
// through tools/pyfluss/flusspy.py). The package has no production code;
// internal/gatewaytest builds and runs the gateway process.
package e2e
