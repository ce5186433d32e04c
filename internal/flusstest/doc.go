// Package flusstest gives tests a real Apache Fluss cluster on loopback.
//
// [Bootstrap] returns the address in env FLUSS_BOOTSTRAP when it is set (CI
// starts one cluster for the whole run), and otherwise starts a cluster once
// per test binary through scripts/fluss-local.sh. A package that uses it calls
// [Main] from its TestMain so that the cluster is stopped when the tests end;
// the script also stops the cluster by itself once the test binary has exited
// (a watcher process keyed on its pid), so a crashed or timed-out test binary
// leaves no JVMs behind.
//
// Failure tests use [StartCluster] for a private cluster they may disturb, or
// [RestartTabletServer] on the binary's cluster: that works for a cluster this
// package started, and for the cluster named by env FLUSS_LOCAL_CLUSTER (a
// scripts/fluss-local.sh cluster name, as .ci/run sets it).
// StartCluster(tb, [SASLUsers](...)) adds a SASL/PLAIN listener to every server
// of the private cluster; [Cluster.SASLBootstrap] is its coordinator address.
// StartCluster(tb, [ClientProxies]()) puts a TCP proxy of this process in
// front of each tablet server for the clients bootstrapped on
// [Cluster.ClientBootstrap]; [Cluster.Partition] cuts one server off them.
//
// [FetchJar] downloads a Fluss jar (fluss-server, or the self-contained
// fluss-client) of an exact version into .cache/fluss, for tests that run
// Fluss's own Java classes; it returns its error so that such a test may skip
// an optional version.
//
// [PyFluss] runs tools/pyfluss/flusspy.py, a CLI over the pinned PyPI client
// pyfluss, as an independent reader and writer to compare with.
//
// It never skips: when no cluster can be had, the test fails with the reason.
// The package keeps process-wide state (the binary's cluster and pyfluss
// venv) because tests reach them without a handle; all functions are safe for
// concurrent use. Test-only: production code never imports it.
package flusstest
