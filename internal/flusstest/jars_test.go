package flusstest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFetchJar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	client := filepath.Join(dir, "fluss-client-1.0.0.jar")
	require.NoError(t, os.WriteFile(client, []byte("PK"), 0o644))
	empty := filepath.Join(dir, "fluss-client-2.0.0.jar")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	server := filepath.Join(dir, "fluss-server-0.9.1-incubating.jar")
	require.NoError(t, os.WriteFile(server, nil, 0o644))
	tests := []struct {
		name, artifact, version string
		answer                  string // the script's stdout
		fail                    bool   // the script fails
		want, wantCmd, wantErr  string
	}{
		{name: "client", artifact: ClientArtifact, version: "1.0.0", answer: client + "\n", want: client, wantCmd: "fetch-client -v 1.0.0"},
		{name: "server", artifact: ServerArtifact, version: "0.9.1-incubating", answer: dir + "\n", want: server, wantCmd: "fetch -v 0.9.1-incubating"},
		{name: "download fails", artifact: ClientArtifact, version: "1.0.0", fail: true, wantCmd: "fetch-client -v 1.0.0", wantErr: "no network"},
		{name: "other version printed", artifact: ClientArtifact, version: "1.0.1", answer: client, wantCmd: "fetch-client -v 1.0.1", wantErr: "want a path to fluss-client-1.0.1.jar"},
		{name: "empty jar", artifact: ClientArtifact, version: "2.0.0", answer: empty, wantCmd: "fetch-client -v 2.0.0", wantErr: "missing or empty"},
		{name: "unknown artifact", artifact: "fluss-flink", version: "1.0.0", wantErr: "not a Fluss artifact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			answer := func([]string) ([]byte, error) {
				if tt.fail {
					return nil, errors.New("mvn: no network")
				}
				return []byte(tt.answer), nil
			}
			fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){"fetch": answer, "fetch-client": answer}}
			got, err := fetchJar(context.Background(), fake.run, "s", tt.artifact, tt.version)
			if tt.wantCmd != "" {
				assert.Equal(t, []string{tt.wantCmd}, fake.commands())
			} else {
				assert.Empty(t, fake.commands())
			}
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
