package flusstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Fluss artifacts on Maven Central whose jars [FetchJar] downloads, for tests
// that run Fluss's own Java classes.
const (
	// ServerArtifact is the jar the clusters run; it bundles fluss-common.
	ServerArtifact = "fluss-server"
	// ClientArtifact shades everything it needs (fluss-common, Arrow, Netty),
	// so it alone is a classpath. Fluss 1.0.0 published only this one.
	ClientArtifact = "fluss-client"
)

// FetchJar returns the path of the jar of a Fluss artifact and version
// (exact, e.g. "0.9.1-incubating" or "1.0.0") in the git-ignored
// .cache/fluss, downloading it with Maven through scripts/fluss-local.sh on
// first use (fetch, fetch-client). Unlike the rest of the package it returns
// the error instead of failing a test, so that a caller can skip where the
// jar is optional (offline, outside CI).
func FetchJar(ctx context.Context, artifact, version string) (string, error) {
	if version == "" {
		return "", fmt.Errorf("fetch %s: no version", artifact)
	}
	script, err := shared.script()
	if err != nil {
		return "", err
	}
	return fetchJar(ctx, shared.run, script, artifact, version)
}

func fetchJar(ctx context.Context, run runner, script, artifact, version string) (string, error) {
	switch artifact {
	case ServerArtifact:
		return serverJar(ctx, run, script, version)
	case ClientArtifact:
		return clientJar(ctx, run, script, version)
	}
	return "", fmt.Errorf("fetch %s: not a Fluss artifact this package knows (%s, %s)", artifact, ServerArtifact, ClientArtifact)
}

// clientJar runs the script's fetch-client, which prints the jar's path.
func clientJar(ctx context.Context, run runner, script, version string) (string, error) {
	out, err := run(ctx, script, "fetch-client", "-v", version)
	if err != nil {
		return "", fmt.Errorf("fetch the fluss-client %s jar: %w", version, err)
	}
	jar := strings.TrimSpace(string(out))
	// the script prints one path; anything else is a script bug worth naming
	if want := "fluss-client-" + version + ".jar"; filepath.Base(jar) != want {
		return "", fmt.Errorf("fetch the fluss-client %s jar: the script printed %q, want a path to %s", version, jar, want)
	}
	if fi, err := os.Stat(jar); err != nil || fi.Size() == 0 {
		return "", fmt.Errorf("fetch the fluss-client %s jar: %q is missing or empty", version, jar)
	}
	return jar, nil
}
