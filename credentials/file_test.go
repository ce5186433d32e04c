package credentials_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/credentials"
	"github.com/fluss-kafka/gateway/kafkaproto"
)

// TestSCRAMKeysAreRFC5802: the stored keys of RFC 7677's example (user
// "user", password "pencil") verify its client proof and give its server
// signature, so the file holds what RFC 5802 and Kafka store.
func TestSCRAMKeysAreRFC5802(t *testing.T) {
	t.Parallel()
	salt, err := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	require.NoError(t, err)
	c, err := kafkaproto.SCRAMCredentialWithSalt(kafkaproto.MechanismSCRAMSHA256, []byte("pencil"), salt, 4096)
	require.NoError(t, err)
	authMessage := []byte("n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
	mac := func(key, msg []byte) []byte {
		m := hmac.New(sha256.New, key)
		m.Write(msg)
		return m.Sum(nil)
	}
	proof, err := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	require.NoError(t, err)
	clientSig := mac(c.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	storedKey := sha256.Sum256(clientKey)
	assert.Equal(t, c.StoredKey, storedKey[:], "StoredKey = H(ClientKey)")
	assert.Equal(t, "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
		base64.StdEncoding.EncodeToString(mac(c.ServerKey, authMessage)), "ServerSignature = HMAC(ServerKey, AuthMessage)")
}

// validFile is a file of one user with every mechanism, password "pw".
func validFile(t *testing.T) string {
	t.Helper()
	e, err := credentials.MakeEntry(credentials.Mechanisms(), []byte("pw"), 4096)
	require.NoError(t, err)
	data, err := credentials.Add(nil, "alice", e)
	require.NoError(t, err)
	return string(data)
}

func TestParseRefusesBadFiles(t *testing.T) {
	t.Parallel()
	good := validFile(t)
	key32 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, tc := range []struct {
		name, file, err string
	}{
		{"empty", "", "the credentials file is empty"},
		{"no users", "users: {}", "at least one user is required"},
		{"a plain-text password", "users: {alice: {password: secret}}", "field password not found"},
		{"unknown mechanism", "users: {alice: {SCRAM-SHA-1: {}}}", "field SCRAM-SHA-1 not found"},
		{"no credential", "users: {alice: {}}", `users["alice"]: no credential`},
		{"bad user name", strings.Replace(good, "alice", "'User:alice'", 1), `users["User:alice"]: ':' is not allowed`},
		{"few iterations", strings.Replace(good, "iterations: 4096", "iterations: 1000", 1), "iterations 1000 is outside [4096, 16384]"},
		{"bad base64", "users: {alice: {SCRAM-SHA-256: {salt: c2FsdA==, iterations: 4096, stored_key: '!!', server_key: " + key32 + "}}}", `users["alice"].SCRAM-SHA-256: stored_key: not base64`},
		{"short key", "users: {alice: {SCRAM-SHA-256: {salt: c2FsdA==, iterations: 4096, stored_key: c2FsdA==, server_key: " + key32 + "}}}",
			"stored_key: 4 bytes, SCRAM-SHA-256 keys have 32"},
		{"missing salt", "users: {alice: {SCRAM-SHA-256: {iterations: 4096, stored_key: " + key32 + ", server_key: " + key32 + "}}}", "salt: required"},
		{"bcrypt hash", "users: {alice: {PLAIN: {hash: '$2a$10$abc'}}}", `users["alice"].PLAIN.hash: not a $pbkdf2-sha256$`},
		{"plain text as hash", "users: {alice: {PLAIN: {hash: secret}}}", "not a $pbkdf2-sha256$"},
		{"weak hash", "users: {alice: {PLAIN: {hash: '$pbkdf2-sha256$i=1000$c2FsdHNhbHQ$" + strings.TrimRight(key32, "=") + "'}}}", "iterations \"1000\" is outside"},
		{"two documents", good + "---\n" + good, "more than one yaml document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := credentials.Parse([]byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	_, err := credentials.Parse([]byte(good))
	require.NoError(t, err)
}

func TestMakeEntryRefuses(t *testing.T) {
	t.Parallel()
	_, err := credentials.MakeEntry([]string{"PLAIN"}, nil, 0)
	assert.ErrorContains(t, err, "the password is empty")
	_, err = credentials.MakeEntry([]string{"SCRAM-SHA-256"}, []byte("pw"), 100)
	assert.ErrorContains(t, err, "iterations 100 is outside")
	_, err = credentials.ParseMechanisms([]string{"GSSAPI"})
	assert.ErrorContains(t, err, `"GSSAPI" is not one of`)
	_, err = credentials.Add(nil, "*", credentials.Entry{})
	assert.ErrorContains(t, err, "wildcard")
}

// TestFileHoldsNoPassword: what Add writes verifies the password for every
// mechanism and holds it nowhere, not even encoded.
func TestFileHoldsNoPassword(t *testing.T) {
	t.Parallel()
	const password = "correct horse battery staple"
	var data []byte
	for _, m := range credentials.Mechanisms() {
		e, err := credentials.MakeEntry([]string{m}, []byte(password), 0)
		require.NoError(t, err)
		data, err = credentials.Add(data, "alice", e)
		require.NoError(t, err)
	}
	for _, enc := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)),
		base64.RawStdEncoding.EncodeToString([]byte(password)), base64.URLEncoding.EncodeToString([]byte(password))} {
		assert.NotContains(t, string(data), enc)
	}
	assert.NotContains(t, string(data), "password")
	set, err := credentials.Parse(data)
	require.NoError(t, err)
	assert.True(t, set.VerifyPlain("alice", []byte(password)))
	assert.False(t, set.VerifyPlain("alice", []byte(password+"!")))
	assert.False(t, set.VerifyPlain("bob", []byte(password)))
	for _, m := range []string{kafkaproto.MechanismSCRAMSHA256, kafkaproto.MechanismSCRAMSHA512} {
		c, ok := set.SCRAMCredential(m, "alice")
		require.True(t, ok, m)
		assert.Equal(t, credentials.DefaultSCRAMIterations, c.Iterations)
		want, err := kafkaproto.SCRAMCredentialWithSalt(m, []byte(password), c.Salt, c.Iterations)
		require.NoError(t, err)
		assert.Equal(t, want, c, m)
	}
	assert.Contains(t, string(data), "$pbkdf2-sha256$i=600000$")
}

// TestAddMergesUsersAndMechanisms: adding a mechanism keeps the user's
// others and the other users.
func TestAddMergesUsersAndMechanisms(t *testing.T) {
	t.Parallel()
	data := []byte(validFile(t))
	e, err := credentials.MakeEntry([]string{kafkaproto.MechanismSCRAMSHA512}, []byte("new"), 8192)
	require.NoError(t, err)
	data, err = credentials.Add(data, "alice", e)
	require.NoError(t, err)
	e, err = credentials.MakeEntry([]string{kafkaproto.MechanismPlain}, []byte("bobpw"), 4096)
	require.NoError(t, err)
	data, err = credentials.Add(data, "bob,=x", e)
	require.NoError(t, err)
	set, err := credentials.Parse(data)
	require.NoError(t, err)
	assert.Equal(t, 2, set.Users())
	assert.True(t, set.VerifyPlain("alice", []byte("pw")), "alice's PLAIN kept")
	assert.True(t, set.VerifyPlain("bob,=x", []byte("bobpw")))
	c, ok := set.SCRAMCredential(kafkaproto.MechanismSCRAMSHA512, "alice")
	require.True(t, ok)
	assert.Equal(t, 8192, c.Iterations, "alice's SCRAM-SHA-512 replaced")
	_, ok = set.SCRAMCredential(kafkaproto.MechanismSCRAMSHA256, "bob,=x")
	assert.False(t, ok)
	_, err = credentials.Add([]byte("users: {alice: {password: x}}"), "bob", e)
	assert.ErrorContains(t, err, "existing credentials")
}
