// Package registrytest gives tests a real schema registry on loopback: Apicurio
// Registry with its Confluent-compatible API, in memory.
//
// [URL] returns env SCHEMA_REGISTRY_URL when it is set (CI starts one registry
// for the whole run; the URL ends in /apis/ccompat/v7, the base a Confluent
// client such as franz-go's pkg/sr takes) and checks that it answers.
// Otherwise it starts one registry per test binary through
// scripts/registry-local.sh, on free ports, in about 5 s once the app is in
// .cache/apicurio (the first start on a machine downloads it, about 160 MB).
// A package that uses it calls [Main] from its TestMain so that the registry
// is stopped when the tests end; the script also stops it by itself once the
// test binary has exited (a watcher keyed on its pid), so a crashed or
// timed-out test binary leaves no JVM behind.
//
// Every test shares the binary's registry, and so do the packages when
// SCHEMA_REGISTRY_URL is set: use subjects unique to the test (a name with
// the test's name and a timestamp), never global config, and do not count
// the registry's subjects.
//
// It never skips: when no registry can be had, the test fails with the
// reason. The package keeps process-wide state (the binary's registry)
// because tests reach it without a handle; all functions are safe for
// concurrent use. Test-only: production code never imports it.
package registrytest
