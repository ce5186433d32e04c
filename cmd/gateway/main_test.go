package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// TestCredentialsAdd: the command reads the password from stdin, prints
// or merges an entry that verifies it, and writes it nowhere in plain
// text.
func TestCredentialsAdd(t *testing.T) {
	t.Parallel()
	const password = "s3cret-from-stdin"
	var stdout, stderr bytes.Buffer
	code := run([]string{"credentials", "add", "-user", "alice", "-mechanism", "SCRAM-SHA-512", "-iterations", "4096"},
		strings.NewReader(password+"\n"), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	set, err := credentials.Parse(stdout.Bytes())
	require.NoError(t, err)
	c, ok := set.SCRAMCredential(kafkaproto.MechanismSCRAMSHA512, "alice")
	require.True(t, ok)
	want, err := kafkaproto.SCRAMCredentialWithSalt(kafkaproto.MechanismSCRAMSHA512, []byte(password), c.Salt, 4096)
	require.NoError(t, err)
	assert.Equal(t, want, c, "the trailing newline is not part of the password")

	path := filepath.Join(t.TempDir(), "credentials.yaml")
	for _, user := range []string{"alice", "bob"} {
		stderr.Reset()
		code = run([]string{"credentials", "add", "-user", user, "-mechanism", "PLAIN", "-iterations", "4096", "-file", path},
			strings.NewReader(user+password), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), password)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	set, err = credentials.Parse(data)
	require.NoError(t, err)
	assert.True(t, set.VerifyPlain("alice", []byte("alice"+password)))
	assert.True(t, set.VerifyPlain("bob", []byte("bob"+password)))

	for _, tc := range []struct {
		args  []string
		stdin string
		err   string
	}{
		{[]string{"-user", "alice", password}, "", "read from stdin, not from arguments"},
		{[]string{"-mechanism", "PLAIN"}, password, "-user is required"},
		{[]string{"-user", "alice", "-mechanism", "GSSAPI"}, password, `"GSSAPI" is not one of`},
		{[]string{"-user", "alice"}, "\n", "the password is empty"},
	} {
		stderr.Reset()
		code = run(append([]string{"credentials", "add"}, tc.args...), strings.NewReader(tc.stdin), &stdout, &stderr)
		assert.NotEqual(t, 0, code, tc.args)
		assert.Contains(t, stderr.String(), tc.err)
	}
}
