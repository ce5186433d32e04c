package flusstest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSASLArg(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		users   []SASLUser
		want    string
		wantErr string
	}{
		{name: "one", users: []SASLUser{{"admin", "admin-secret"}}, want: "admin:admin-secret"},
		{name: "two", users: []SASLUser{{"admin", "a"}, {"bob_2", "x.y@z%1+2-3"}}, want: "admin:a,bob_2:x.y@z%1+2-3"},
		{name: "none", wantErr: "at least one user"},
		{name: "empty name", users: []SASLUser{{"", "pw"}}, wantErr: `sasl user name ""`},
		{name: "name with colon", users: []SASLUser{{"a:b", "pw"}}, wantErr: "want [A-Za-z0-9_-]+"},
		{name: "empty password", users: []SASLUser{{"a", ""}}, wantErr: `password of sasl user "a"`},
		{name: "password with space", users: []SASLUser{{"a", "p w"}}, wantErr: `password of sasl user "a"`},
		{name: "password with quote", users: []SASLUser{{"a", `p"w`}}, wantErr: `password of sasl user "a"`},
		{name: "password with comma", users: []SASLUser{{"a", "p,w"}}, wantErr: `password of sasl user "a"`},
		{name: "duplicate", users: []SASLUser{{"a", "x"}, {"a", "y"}}, wantErr: `"a" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := saslArg(tt.users)
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

func TestStartClusterSASLOptions(t *testing.T) {
	t.Parallel()
	both := "FLUSS_BOOTSTRAP=127.0.0.1:4567\nFLUSS_SASL_BOOTSTRAP=127.0.0.1:4568\n"
	tests := []struct {
		name     string
		opts     []Option
		out      string
		wantArgs string
		wantSASL string
		wantErr  string
	}{
		{
			name:     "plaintext only",
			out:      "FLUSS_BOOTSTRAP=127.0.0.1:4567\n",
			wantArgs: "start -s c -n 1 -o 42",
		},
		{
			name:     "sasl line ignored without the option",
			out:      both,
			wantArgs: "start -s c -n 1 -o 42",
		},
		{
			name:     "sasl",
			opts:     []Option{SASLUsers(SASLUser{"admin", "s1"}, SASLUser{"alice", "s2"}), TabletServers(2)},
			out:      both,
			wantArgs: "start -s c -n 2 -o 42 --sasl admin:s1,alice:s2",
			wantSASL: "127.0.0.1:4568",
		},
		{
			name:     "server settings",
			opts:     []Option{ServerSetting("default.replication.factor", "3"), ServerSetting("zookeeper.client.session-timeout", "6s")},
			out:      both,
			wantArgs: "start -s c -n 1 -o 42 -D default.replication.factor=3 -D zookeeper.client.session-timeout=6s",
		},
		{
			name:     "sasl line missing",
			opts:     []Option{SASLUsers(SASLUser{"admin", "s1"})},
			out:      "FLUSS_BOOTSTRAP=127.0.0.1:4567\n",
			wantArgs: "start -s c -n 1 -o 42 --sasl admin:s1",
			wantErr:  "no FLUSS_SASL_BOOTSTRAP= line",
		},
		{
			name:     "sasl line bad",
			opts:     []Option{SASLUsers(SASLUser{"admin", "s1"})},
			out:      "FLUSS_BOOTSTRAP=127.0.0.1:4567\nFLUSS_SASL_BOOTSTRAP=127.0.0.1\n",
			wantArgs: "start -s c -n 1 -o 42 --sasl admin:s1",
			wantErr:  "want host:port",
		},
		{
			name:    "bad user never reaches the script",
			opts:    []Option{SASLUsers(SASLUser{"admin", "has space"})},
			wantErr: `password of sasl user "admin"`,
		},
		{
			name:    "no users",
			opts:    []Option{SASLUsers()},
			wantErr: "at least one user",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
				"start": func([]string) ([]byte, error) { return []byte(tt.out), nil },
			}}
			c, err := startCluster(context.Background(), fake.run, "/x/fluss-local.sh", "c", 42, buildOptions(tt.opts))
			if tt.wantArgs == "" {
				assert.Empty(t, fake.commands())
			} else {
				assert.Equal(t, []string{tt.wantArgs}, fake.commands())
			}
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "127.0.0.1:4567", c.Bootstrap())
			assert.Equal(t, tt.wantSASL, c.SASLBootstrap())
		})
	}
}

func TestAttachClusterSASL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		out      string
		wantSASL string
		wantErr  string
	}{
		{name: "plaintext", out: "FLUSS_BOOTSTRAP=127.0.0.1:9123\n"},
		{name: "sasl", out: "FLUSS_BOOTSTRAP=127.0.0.1:9123\nFLUSS_SASL_BOOTSTRAP=127.0.0.1:9223\n", wantSASL: "127.0.0.1:9223"},
		{name: "sasl bad", out: "FLUSS_BOOTSTRAP=127.0.0.1:9123\nFLUSS_SASL_BOOTSTRAP=x:0\n", wantErr: "bad port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeScript{answers: map[string]func([]string) ([]byte, error){
				"bootstrap": func([]string) ([]byte, error) { return []byte(tt.out), nil },
			}}
			c, err := attachCluster(context.Background(), fake.run, "/x/fluss-local.sh", "ci", "127.0.0.1:9123")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantSASL, c.SASLBootstrap())
		})
	}
}

// TestStartClusterSASLScript runs the real script: a private cluster with a
// SASL listener reports both addresses through start and bootstrap, both
// accept connections, and a tablet server restart keeps the cluster usable.
// The SASL handshake itself is tested with the Fluss client in package fluss
// (TestSASLPlainRealCluster).
func TestStartClusterSASLScript(t *testing.T) {
	c := StartCluster(t, SASLUsers(SASLUser{"admin", "admin-secret"}))
	require.NotEmpty(t, c.SASLBootstrap())
	require.NotEqual(t, c.Bootstrap(), c.SASLBootstrap())
	for _, addr := range []string{c.Bootstrap(), c.SASLBootstrap()} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err, addr)
		require.NoError(t, conn.Close())
	}

	ctx, cancel := context.WithTimeout(context.Background(), tabletTimeout)
	defer cancel()
	require.NoError(t, c.RestartTabletServer(ctx, 0))

	script, err := shared.script()
	require.NoError(t, err)
	out, err := runScript(ctx, script, "bootstrap", "-s", c.Name())
	require.NoError(t, err)
	assert.Equal(t, "FLUSS_BOOTSTRAP="+c.Bootstrap()+"\nFLUSS_SASL_BOOTSTRAP="+c.SASLBootstrap()+"\n", string(out))
	status, err := runScript(ctx, script, "status", "-s", c.Name())
	require.NoError(t, err, "every process runs after the restart")
	assert.Contains(t, string(status), "FLUSS_SASL_BOOTSTRAP="+c.SASLBootstrap()+" (SASL/PLAIN users: admin)")
	assert.NotContains(t, string(status), "admin-secret", "status does not show passwords")
	assert.Equal(t, 3, strings.Count(string(status), " running "), "zookeeper, coordinator, tablet-0:\n%s", status)
}
