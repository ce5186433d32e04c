package kafkaproto_test

import (
	"crypto/subtle"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/kafkaproto/kafkatest"
)

// swappableStore is a CredentialStore of one user whose password a test
// changes.
type swappableStore struct {
	mu       sync.Mutex
	user     string
	password string
	scram    map[string]kafkaproto.SCRAMCredential
}

func (s *swappableStore) set(t *testing.T, password string) {
	t.Helper()
	creds := map[string]kafkaproto.SCRAMCredential{}
	for _, m := range []string{kafkaproto.MechanismSCRAMSHA256, kafkaproto.MechanismSCRAMSHA512} {
		c, err := kafkaproto.NewSCRAMCredential(m, []byte(password), 4096)
		require.NoError(t, err)
		creds[m] = c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.password, s.scram = password, creds
}

func (s *swappableStore) SCRAMCredential(mechanism, user string) (kafkaproto.SCRAMCredential, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.scram[mechanism]
	return c, ok && user == s.user
}

func (s *swappableStore) VerifyPlain(user string, password []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return subtle.ConstantTimeCompare([]byte(s.password), password) == 1 && user == s.user
}

// TestSASLCredentialStoreChanges: the store is asked at every login, so a
// changed password applies to new logins at once, while a connection
// authenticated under the old one keeps producing.
func TestSASLCredentialStoreChanges(t *testing.T) {
	t.Parallel()
	store := &swappableStore{user: "alice"}
	store.set(t, "old")
	env := kafkatest.StartServer(t, kafkaproto.Config{SASL: &kafkaproto.SASLConfig{Credentials: store}})
	mechs := kafkatest.SASLMechanisms("alice")
	produce := func(cl *kgo.Client) error {
		return cl.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: kafkatest.Topic, Value: []byte("x")}).FirstErr()
	}
	login := func(t *testing.T, mech sasl.Mechanism, ok bool) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Addr), kgo.SASL(mech), kgo.RequestRetries(0), loginLimit(ok))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		if err := produce(cl); ok {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
		}
		return cl
	}
	before := map[string]*kgo.Client{}
	for name, mech := range mechs {
		before[name] = login(t, mech("old"), true)
	}
	store.set(t, "new")
	for name, mech := range mechs {
		t.Run(name, func(t *testing.T) {
			login(t, mech("new"), true)
			login(t, mech("old"), false)
			require.NoError(t, produce(before[name]), "the connection authenticated before the change")
		})
	}
}
