// Package gatewaytest runs the gateway binary (./cmd/gateway) as a child
// process on loopback ports, for the end-to-end tests (e2e) and the dev tools
// (tools/gateway-bench).
//
// [Binary] builds the binary once per process (with -race when asked) into
// .cache/gatewaytest under the module root ([ModuleRoot]). [Config] is what
// a caller varies in the generated configuration. [Start] writes it, starts
// the binary with free ports and returns once /readyz answers 200; the
// [Process] then signals, stops or kills it, checks for a clean exit, reads
// its log (a file next to the configuration), scrapes /metrics into a
// [MetricSet] and rewrites its routes for the next SIGHUP. Methods named
// Require… and [StartTest] are the testing.TB forms: they fail the test
// instead of returning an error.
//
// For fault tests: [StartOn] puts the Kafka listener on a chosen port,
// [Process.Kill] is kill -9, and [Process.Successor] starts a new instance
// on the same Kafka port once it is free (a restart, or a takeover while
// the old one drains). [JavaLoad] compiles java/LoadMain.java, a steady
// idempotent Java producer that reports each record's outcome on stdout.
//
// Test and dev only: the gateway itself never imports it.
package gatewaytest
