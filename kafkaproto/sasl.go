package kafkaproto

// SASL mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC
// 7677) against a CredentialStore, and OAUTHBEARER (RFC 7628) against a
// TokenValidator (sasl_oauthbearer.go): SASLConfig.Credentials, or one made of
// SASLConfig.Users, whose SCRAM credentials are derived once at start-up
// with a random salt per user and mechanism. Unknown users get a made-up
// salt so that the exchange does not reveal which users exist.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

var scramHashes = map[string]func() hash.Hash{
	MechanismSCRAMSHA256: sha256.New,
	MechanismSCRAMSHA512: sha512.New,
}

var errBadCredentials = errors.New("invalid username or password")

// CheckSASLUserName returns why name cannot be a SASL user name, or nil.
// The connection's principal is "User:" + the name byte for byte, so a
// name must not read as another principal in an ACL: not empty, not
// ANONYMOUS in any case (the principal of connections without SASL), not
// the wildcard "*", no ':' ("User:alice" would look like alice's
// principal), and no control characters (NUL separates PLAIN's fields;
// the rest only hide in logs). ',' and '=' (escaped by SCRAM) and any
// other UTF-8 are allowed, compared without normalisation.
func CheckSASLUserName(name string) error {
	switch {
	case name == "":
		return errors.New("the user name is empty")
	case strings.EqualFold(name, anonymousName):
		return fmt.Errorf("%s is the principal of connections without SASL", AnonymousPrincipal)
	case name == "*":
		return errors.New("* is the wildcard of every principal in ACLs")
	case strings.Contains(name, ":"):
		return fmt.Errorf("':' is not allowed: the principal would be %s, which reads as a typed principal in an ACL", UserPrincipal(name))
	case !utf8.ValidString(name):
		return errors.New("the user name is not valid UTF-8")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errors.New("control characters are not allowed in a user name")
	}
	return nil
}

// saslAuthenticator starts exchanges of the configured mechanisms against
// the credential store.
type saslAuthenticator struct {
	mechanisms []string
	store      CredentialStore
	tokens     TokenValidator
	// iterations is what an unknown user's made-up SCRAM credential claims.
	iterations int
}

func newSASLAuthenticator(cfg *SASLConfig) (*saslAuthenticator, error) {
	a := &saslAuthenticator{mechanisms: cfg.Mechanisms, store: cfg.Credentials, tokens: cfg.Tokens, iterations: cfg.SCRAMIterations}
	if a.store != nil {
		return a, nil
	}
	st := &passwordStore{plain: make(map[string]string), scram: make(map[string]map[string]SCRAMCredential)}
	for _, u := range cfg.Users {
		st.plain[u.Name] = u.Password
	}
	for _, m := range cfg.Mechanisms {
		if _, ok := scramHashes[m]; !ok {
			continue
		}
		creds := make(map[string]SCRAMCredential, len(cfg.Users))
		for _, u := range cfg.Users {
			c, err := NewSCRAMCredential(m, []byte(u.Password), cfg.SCRAMIterations)
			if err != nil {
				return nil, fmt.Errorf("derive %s credential for %q: %w", m, u.Name, err)
			}
			creds[u.Name] = c
		}
		st.scram[m] = creds
	}
	a.store = st
	return a, nil
}

// passwordStore is the CredentialStore of SASLConfig.Users: plain-text
// passwords, SCRAM credentials derived from them once.
type passwordStore struct {
	plain map[string]string                     // user -> password
	scram map[string]map[string]SCRAMCredential // mechanism -> user -> credential
}

func (p *passwordStore) SCRAMCredential(mechanism, user string) (SCRAMCredential, bool) {
	c, ok := p.scram[mechanism][user]
	return c, ok
}

func (p *passwordStore) VerifyPlain(user string, password []byte) bool {
	want, ok := p.plain[user]
	return subtle.ConstantTimeCompare([]byte(want), password) == 1 && ok
}

// NewSCRAMCredential derives the credential of password for a SCRAM
// mechanism with a fresh random 16-byte salt (as Kafka's kafka-configs).
func NewSCRAMCredential(mechanism string, password []byte, iterations int) (SCRAMCredential, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return SCRAMCredential{}, err
	}
	return SCRAMCredentialWithSalt(mechanism, password, salt, iterations)
}

// SCRAMCredentialWithSalt derives the credential of password with salt.
func SCRAMCredentialWithSalt(mechanism string, password, salt []byte, iterations int) (SCRAMCredential, error) {
	h, ok := scramHashes[mechanism]
	if !ok {
		return SCRAMCredential{}, fmt.Errorf("%q is not a SCRAM mechanism", mechanism)
	}
	salted, err := pbkdf2.Key(h, string(password), salt, iterations, h().Size())
	if err != nil {
		return SCRAMCredential{}, err
	}
	clientKey := hmacSum(h, salted, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return SCRAMCredential{
		Salt:       salt,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, salted, []byte("Server Key")),
		Iterations: iterations,
	}, nil
}

// IsSCRAM reports whether mechanism is one of the SCRAM mechanisms.
func IsSCRAM(mechanism string) bool {
	_, ok := scramHashes[mechanism]
	return ok
}

// SCRAMKeySize is the size of mechanism's StoredKey and ServerKey (its
// hash's), 0 for a mechanism that is not SCRAM.
func SCRAMKeySize(mechanism string) int {
	if h, ok := scramHashes[mechanism]; ok {
		return h().Size()
	}
	return 0
}

func hmacSum(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

// saslSession is one authentication exchange.
type saslSession interface {
	// step consumes a client message and returns the server's reply and
	// whether the exchange is complete (authenticated). An error means
	// authentication failed.
	step(msg []byte) (reply []byte, done bool, err error)
	// user is the name the client offered ("" before it offered one); it
	// is the authenticated name once step reported done.
	user() string
	mechanism() string
	// expiry is when the authenticated session ends (KIP-368); zero for
	// none (passwords do not expire).
	expiry() time.Time
}

// start begins an exchange; ok is false for an unsupported mechanism. ctx
// bounds what the exchange asks others (the token validator).
func (a *saslAuthenticator) start(ctx context.Context, mechanism string) (saslSession, bool) {
	for _, m := range a.mechanisms {
		if m != mechanism {
			continue
		}
		switch m {
		case MechanismPlain:
			return &plainSession{a: a}, true
		case MechanismOAuthBearer:
			return &oauthSession{ctx: ctx, tokens: a.tokens}, true
		}
		return &scramSession{a: a, mech: m, h: scramHashes[m]}, true
	}
	return nil, false
}

type plainSession struct {
	a    *saslAuthenticator
	name string
}

func (p *plainSession) user() string      { return p.name }
func (p *plainSession) mechanism() string { return MechanismPlain }
func (p *plainSession) expiry() time.Time { return time.Time{} }

func (p *plainSession) step(msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, errors.New("malformed PLAIN message")
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	p.name = user // for the failure's log line; the principal only once done
	if !p.a.store.VerifyPlain(user, pass) || (authz != "" && authz != user) {
		return nil, false, errBadCredentials
	}
	return []byte{}, true, nil
}

type scramSession struct {
	a    *saslAuthenticator
	mech string
	h    func() hash.Hash

	name        string
	cred        SCRAMCredential
	known       bool
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string
}

func (s *scramSession) user() string      { return s.name }
func (s *scramSession) mechanism() string { return s.mech }
func (s *scramSession) expiry() time.Time { return time.Time{} }

func (s *scramSession) step(msg []byte) ([]byte, bool, error) {
	if s.serverFirst == "" {
		return s.first(string(msg))
	}
	return s.final(string(msg))
}

// first handles client-first-message: gs2-header client-first-message-bare.
func (s *scramSession) first(msg string) ([]byte, bool, error) {
	// gs2-header = ("n" | "y") "," [ "a=" authzid ] ","
	if len(msg) < 3 || (msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',' {
		return nil, false, errors.New("malformed SCRAM client-first message (channel binding is not supported)")
	}
	end := strings.IndexByte(msg[2:], ',')
	if end < 0 {
		return nil, false, errors.New("malformed SCRAM gs2 header")
	}
	authz := msg[2 : 2+end]
	s.gs2Header = msg[:2+end+1]
	s.clientFirst = msg[2+end+1:]
	attrs := strings.Split(s.clientFirst, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return nil, false, errors.New("malformed SCRAM client-first message")
	}
	name, err := scramUnescape(attrs[0][2:])
	if err != nil {
		return nil, false, err
	}
	s.name = name // for the failure's log line; the principal only once done
	if authz != "" && authz != "a="+attrs[0][2:] {
		return nil, false, errors.New("SCRAM authorization id must equal the user name")
	}
	// One lookup: the credential stays for the whole exchange even if the
	// store changes meanwhile.
	s.cred, s.known = s.a.store.SCRAMCredential(s.mech, name)
	if !s.known {
		// Made-up credential: the exchange fails at the proof.
		if s.cred, err = NewSCRAMCredential(s.mech, nil, 1); err != nil {
			return nil, false, err
		}
		s.cred.Iterations = s.a.iterations
	}
	snonce := make([]byte, 18)
	if _, err := rand.Read(snonce); err != nil {
		return nil, false, err
	}
	s.nonce = attrs[1][2:] + base64.RawURLEncoding.EncodeToString(snonce)
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

// final handles client-final-message: c=..., r=..., [extensions,] p=...
func (s *scramSession) final(msg string) ([]byte, bool, error) {
	idx := strings.LastIndex(msg, ",p=")
	if idx < 0 {
		return nil, false, errors.New("malformed SCRAM client-final message")
	}
	withoutProof, proofB64 := msg[:idx], msg[idx+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return nil, false, errors.New("SCRAM channel binding mismatch")
	}
	// Like Kafka's ScramSaslServer, require only that the nonce ends with
	// ours: librdkafka <= 2.0 sends client nonce + the full server nonce.
	if !strings.HasPrefix(attrs[1], "r=") || !strings.HasSuffix(attrs[1], s.nonce) {
		return nil, false, errors.New("SCRAM nonce mismatch")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != s.h().Size() || len(s.cred.StoredKey) != len(proof) {
		return nil, false, errors.New("malformed SCRAM proof")
	}
	authMessage := []byte(s.clientFirst + "," + s.serverFirst + "," + withoutProof)
	clientSig := hmacSum(s.h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	sum := s.h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 || !s.known {
		return nil, false, errBadCredentials
	}
	serverSig := hmacSum(s.h, s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}

// scramUnescape decodes a saslname (",=" escaped as "=2C", "=3D").
func scramUnescape(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", errors.New("invalid escape in SCRAM user name")
		}
		i += 2
	}
	return b.String(), nil
}
