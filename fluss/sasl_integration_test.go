package fluss

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// SASL/PLAIN (AUTHENTICATE, api 1038) against a real Fluss server: one
// private cluster whose coordinator and tablet server have a second listener
// (security protocol sasl, mechanism PLAIN, users admin and alice) next to the
// plaintext one.

// saslFailBudget bounds how long a refused handshake may take: far below the
// dial and request timeouts of saslClient, so a hang cannot pass.
const saslFailBudget = 5 * time.Second

func saslClient(t *testing.T, addr, user, password string) *Client {
	t.Helper()
	c, err := NewClient(Config{
		Bootstrap: []string{addr}, Username: user, Password: password,
		RequestTimeout: 30 * time.Second, DialTimeout: 20 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

func TestSASLPlainRealCluster(t *testing.T) {
	start := time.Now()
	cluster := flusstest.StartCluster(t, flusstest.SASLUsers(
		flusstest.SASLUser{Name: "admin", Password: "admin-secret"},
		flusstest.SASLUser{Name: "alice", Password: "alice.pw@1"},
	))
	t.Logf("private SASL cluster started in %s: plaintext %s, SASL %s",
		time.Since(start).Round(time.Millisecond), cluster.Bootstrap(), cluster.SASLBootstrap())
	saslAddr := cluster.SASLBootstrap()
	require.NotEmpty(t, saslAddr)

	t.Run("right credentials write and read back", func(t *testing.T) {
		admin := saslClient(t, saslAddr, "admin", "admin-secret")
		ctx := testContext(t)

		// Metadata asked on the SASL listener names the tablet servers'
		// SASL endpoints, not the plaintext ones: the produce below goes
		// through an authenticated tablet server connection.
		saslServers, err := admin.TabletServers(ctx)
		require.NoError(t, err)
		plainServers, err := saslClient(t, cluster.Bootstrap(), "", "").TabletServers(ctx)
		require.NoError(t, err)
		require.Len(t, saslServers, 1)
		require.Len(t, plainServers, 1)
		assert.Equal(t, plainServers[0].ID, saslServers[0].ID)
		assert.NotEqual(t, plainServers[0].Port, saslServers[0].Port, "SASL listener of the tablet server")

		schema := Schema{Columns: []Column{{Name: "id", Type: BigInt()}, {Name: "s", Type: String()}}}
		path, info := createTestTable(t, admin, TableDescriptor{Schema: schema, BucketCount: 1})
		const rows = 50
		b, err := NewArrowLogBuilder(&info.Descriptor.Schema, info.SchemaID, info.Descriptor.ArrowCompression(), 3)
		require.NoError(t, err)
		for i := range rows {
			require.NoError(t, b.Append(Row{IntDatum(int64(i)), StringDatum("sasl")}))
		}
		batch, err := b.AppendTo(nil)
		require.NoError(t, err)
		leader, err := admin.BucketLeader(ctx, info.TableID, NoPartition, 0)
		require.NoError(t, err)
		assert.Equal(t, saslServers[0].Port, leader.Port)
		res, err := admin.ProduceLog(ctx, leader.ID, &ProduceLogRequest{
			TableID: info.TableID, Acks: -1, Timeout: 10 * time.Second,
			Buckets: []BucketRecords{{PartitionID: NoPartition, Bucket: 0, Records: batch}},
		})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err)
		assert.Equal(t, int64(0), res[0].Offset)

		// A second user reads back what the first wrote.
		alice := saslClient(t, saslAddr, "alice", "alice.pw@1")
		aliceInfo, err := alice.TableInfo(ctx, path)
		require.NoError(t, err)
		require.Equal(t, info.TableID, aliceInfo.TableID)
		offs, err := alice.ListOffsets(ctx, info.TableID, NoPartition, []int32{0}, LatestOffset)
		require.NoError(t, err)
		assert.Equal(t, map[int32]int64{0: rows}, offs)
		fetched, err := alice.FetchLog(ctx, &FetchLogRequest{TableID: info.TableID,
			Buckets: []FetchBucket{{PartitionID: NoPartition, Bucket: 0, Offset: 0}}})
		require.NoError(t, err)
		require.Len(t, fetched, 1)
		require.NoError(t, fetched[0].Err)
		recs, err := DecodeLogBatches(fetched[0].Records, &aliceInfo.Descriptor.Schema)
		require.NoError(t, err)
		require.Len(t, recs, rows)
		for i, r := range recs {
			assert.Equal(t, int64(i), r.Offset)
			assert.Equal(t, int64(i), r.Row[0].I)
			assert.Equal(t, "sasl", string(r.Row[1].B))
		}
	})

	// Every refusal is a typed, non-retriable AUTHENTICATE_EXCEPTION that
	// arrives at once, and stays so when asked again on the same client.
	refusals := []struct {
		name, addr, user, password string
		wantMessage                string
	}{
		{"wrong password", saslAddr, "admin", "wrong-secret", "Invalid username or password"},
		{"unknown user", saslAddr, "mallory", "admin-secret", "Invalid username or password"},
		{"other user's password", saslAddr, "alice", "admin-secret", "Invalid username or password"},
		{"no credentials on the SASL listener", saslAddr, "", "", "has not completed authentication"},
		{"credentials on the plaintext listener", cluster.Bootstrap(), "admin", "admin-secret", "protocol of server is 'PLAINTEXT'"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			c := saslClient(t, tt.addr, tt.user, tt.password)
			for attempt := range 2 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				began := time.Now()
				_, err := c.DatabaseExists(ctx, "fluss")
				took := time.Since(began)
				cancel()
				require.Error(t, err, "attempt %d", attempt)
				assert.Less(t, took, saslFailBudget, "attempt %d refused promptly: %v", attempt, err)
				var fe *Error
				require.True(t, errors.As(err, &fe), "attempt %d: typed *fluss.Error in %v", attempt, err)
				assert.Equal(t, int32(46), fe.Code)
				assert.Equal(t, "AUTHENTICATE_EXCEPTION", fe.Name)
				assert.ErrorIs(t, err, ErrAuthenticate)
				assert.False(t, IsRetriable(err))
				assert.Contains(t, fe.Message, tt.wantMessage)
				if tt.user != "" && tt.addr == saslAddr {
					assert.True(t, strings.Contains(err.Error(), `authenticate as "`+tt.user+`"`),
						"the error names the user: %v", err)
					assert.NotContains(t, err.Error(), tt.password, "the error does not leak the password")
				}
			}
		})
	}
}
