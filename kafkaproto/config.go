package kafkaproto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config holds the server's tunables. The zero value of each field means the
// documented default.
type Config struct {
	// AdvertisedHost and AdvertisedPort are the broker address Metadata
	// returns; clients connect to it after bootstrap. Each defaults to the
	// local host or port of the connection the Metadata request came in on.
	AdvertisedHost string
	AdvertisedPort int32
	// NodeID is the single broker's id in Metadata. Default 0.
	NodeID int32
	// ClusterID is returned in Metadata v2+. Default "fluss-kafka-gateway".
	ClusterID string

	// MaxFrameBytes bounds one request; larger frames close the connection.
	// Default 100 MiB (Kafka's socket.request.max.bytes).
	MaxFrameBytes int
	// MaxReadBytes bounds the request bytes being read and handled at once
	// over all connections. Bytes are counted as they arrive, not as a size
	// field claims: a request of up to 1 MiB reserves its size before its
	// body is read, a larger one reserves as its buffer fills (at most
	// max(received, 64 KiB) ahead). A connection that cannot reserve waits
	// without reading. Default 256 MiB; at least MaxFrameBytes. Not to be
	// set together with Memory.
	MaxReadBytes int64
	// Memory is the budget request frames and the record batches decoded
	// from them are charged to; nil means a private one of MaxReadBytes.
	// Share it with the backend (the writer's buffer) to bound everything
	// requests pin with one limit: reading stops while it is used up.
	//
	// Frames reserve with TryAcquire and Acquire as MaxReadBytes describes,
	// never more than min(1 MiB, MaxFrameBytes) in one call, so the budget
	// must be able to grant that much at once. A frame's reservation is
	// released once it is handled. Each decoded batch is charged with Force
	// (its decompression buffer, or its bytes in the frame for codec none,
	// plus its decoded records and headers, 88 and 40 bytes each) until
	// PartitionProduce.Release, or until it is garbage-collected if the
	// sink drops it unreleased.
	//
	// A shared budget must let Force go past its limit (the frame is
	// admitted already: waiting there could deadlock), and it must not let
	// waiting frames starve its other users: that fairness is its job, not
	// kafkaproto's. The backend must not wait on it for memory that only
	// the release of a batch it holds would free.
	Memory MemoryBudget
	// MaxFirstRequestBytes bounds the first request of a connection without
	// SASL, so a connection that has not yet sent one valid request cannot
	// declare a huge frame (with SASL, every request before authentication
	// is bounded by 512 KiB, Kafka's sasl.server.max.receive.size). Clients
	// open with ApiVersions or Metadata, except some that skip ApiVersions
	// (sarama configured below Kafka 2.4) and may open with a Produce.
	// Default 2 MiB (at most MaxFrameBytes).
	MaxFirstRequestBytes int
	// RequestReadTimeout and MinReadBytesPerSecond bound the time to
	// receive one request once its first byte has arrived:
	// RequestReadTimeout plus its size divided by MinReadBytesPerSecond
	// (waiting for the read budget before the body does not count). A
	// client slower than that is disconnected, so a connection that
	// declares a large request and trickles it cannot hold its buffer and
	// goroutines for IdleTimeout. Defaults 10 s and 1 MiB/s (a 100 MiB
	// request gets 110 s).
	RequestReadTimeout    time.Duration
	MinReadBytesPerSecond int64
	// MaxInFlightRequests bounds the requests read from one connection but
	// not yet answered; when reached the connection is not read
	// (back-pressure). Default 16.
	MaxInFlightRequests int
	// MaxMessageBytes bounds one record batch on the wire. Default 1048588
	// (Kafka's max.message.bytes); larger batches get MESSAGE_TOO_LARGE.
	MaxMessageBytes int
	// MaxDecompressedBytes bounds one decompressed batch, and separately the
	// memory of its decoded records (88 bytes per record, so at most ~760k
	// records per batch by default; more get MESSAGE_TOO_LARGE, which Java
	// producers answer by splitting the batch). Default 64 MiB.
	MaxDecompressedBytes int
	// IdleTimeout closes a connection that sends nothing for this long.
	// Default 10 minutes (Kafka's connections.max.idle.ms).
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose client does not read a
	// response within this time. Default 30 s.
	WriteTimeout time.Duration
	// DefaultProduceTimeout replaces a Produce timeout_ms <= 0. Default 30 s.
	DefaultProduceTimeout time.Duration

	// ProducerStateTTL forgets the sequence state of a (producer id,
	// partition) idle this long. Default 1 hour.
	ProducerStateTTL time.Duration
	// MaxProducerStates bounds the number of (producer id, partition)
	// states; the least recently used are forgotten first. Default 100000.
	MaxProducerStates int

	// MaxConnections bounds the connections open at once on each listener
	// given to Serve, counted per listener (Kafka's
	// listener.name.<name>.max.connections): while it is reached, new
	// connections wait in the listen backlog until one closes. 0 means no
	// limit.
	MaxConnections int
	// ConnectionLimits bounds the connections per client address, shared
	// by the listeners given the same one (Kafka's
	// max.connections.per.ip); nil means no limit.
	ConnectionLimits *ConnectionLimits

	// SASL, when non-nil, requires clients to authenticate.
	SASL *SASLConfig
	// TLS, when non-nil, makes Serve wrap its listener in TLS.
	TLS *tls.Config
	// PrincipalRules name the principal of a connection whose client
	// presented a certificate that TLS verified (TLS.ClientAuth), when it
	// does not authenticate with SASL; nil is Kafka's DEFAULT, the
	// certificate's whole subject.
	PrincipalRules *PrincipalRules
}

// SASLConfig enables SASL authentication.
type SASLConfig struct {
	// Mechanisms offered, from "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"
	// and "OAUTHBEARER" (needs Tokens). Default: the first three.
	Mechanisms []string
	// Users who may connect, with plain-text passwords (SCRAM keys are
	// derived from them at start-up). Either Users or Credentials.
	Users []SASLUser
	// Credentials, when set, holds the users instead of Users. It is asked
	// at every authentication, so a store that changes applies to new
	// logins while authenticated connections stay.
	Credentials CredentialStore
	// Tokens validates OAUTHBEARER bearer tokens (RFC 7628); required
	// when Mechanisms has OAUTHBEARER.
	Tokens TokenValidator
	// SCRAMIterations is the PBKDF2 iteration count for SCRAM credentials
	// derived at start-up from Users, and what an unknown user's made-up
	// credential claims. Default 4096 (the RFC 7677 minimum).
	SCRAMIterations int
}

// CredentialStore holds SASL credentials without their passwords. Its
// methods are called concurrently, by every connection authenticating.
type CredentialStore interface {
	// SCRAMCredential returns user's credential for a SCRAM mechanism.
	SCRAMCredential(mechanism, user string) (SCRAMCredential, bool)
	// VerifyPlain reports whether password is user's PLAIN password. It
	// should take as long for an unknown user as for a known one.
	VerifyPlain(user string, password []byte) bool
}

// TokenValidator checks an OAUTHBEARER bearer token. Its method is called
// concurrently, by every connection authenticating, on the connection's
// reader: it should not wait long (keys are fetched ahead, not per token).
type TokenValidator interface {
	// ValidateToken returns whom token names and until when, or why it
	// is refused (the client sees the reason in its error message).
	ValidateToken(ctx context.Context, token string) (Token, error)
}

// Token is what a valid bearer token grants.
type Token struct {
	// Principal is the user name: the connection's principal is
	// User:<Principal>. It must pass [CheckSASLUserName].
	Principal string
	// Expiry ends the session (KIP-368): the client is told its lifetime
	// in SaslAuthenticate and must re-authenticate before it, or the
	// connection is closed at its next request. Zero: no end.
	Expiry time.Time
}

// SCRAMCredential is what a server keeps of a SCRAM password (RFC 5802,
// Kafka's ScramCredential): StoredKey = H(HMAC(SaltedPassword, "Client
// Key")), ServerKey = HMAC(SaltedPassword, "Server Key"), SaltedPassword
// = PBKDF2(password, Salt, Iterations).
type SCRAMCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int
}

// SASLUser is one user's credentials.
type SASLUser struct {
	// Name is the SASL user name; the connection's principal is
	// User:<Name>. It must pass [CheckSASLUserName].
	Name     string
	Password string
}

// The SASL mechanisms this package implements.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
)

// DefaultConfig returns the default of every tunable: what a zero field
// means. MaxReadBytes is a floor: a zero MaxReadBytes means the larger of it
// and MaxFrameBytes; MaxFirstRequestBytes a ceiling: zero means the smaller
// of it and MaxFrameBytes. AdvertisedHost and AdvertisedPort stay zero (the
// connection's local address), and SASL and TLS nil (off); the defaults of
// an enabled SASL are DefaultSASLConfig.
func DefaultConfig() Config {
	return Config{
		ClusterID:             "fluss-kafka-gateway",
		MaxFrameBytes:         100 << 20,
		MaxReadBytes:          256 << 20,
		MaxFirstRequestBytes:  2 << 20,
		RequestReadTimeout:    10 * time.Second,
		MinReadBytesPerSecond: 1 << 20,
		MaxInFlightRequests:   16,
		MaxMessageBytes:       1048588,
		MaxDecompressedBytes:  64 << 20,
		IdleTimeout:           10 * time.Minute,
		WriteTimeout:          30 * time.Second,
		DefaultProduceTimeout: 30 * time.Second,
		ProducerStateTTL:      time.Hour,
		MaxProducerStates:     100000,
	}
}

// DefaultSASLConfig returns the defaults of an enabled SASL: every
// mechanism, and 4096 SCRAM iterations. It has no users.
func DefaultSASLConfig() SASLConfig {
	return SASLConfig{
		Mechanisms:      []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512},
		SCRAMIterations: 4096,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.ClusterID == "" {
		c.ClusterID = d.ClusterID
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = d.MaxFrameBytes
	}
	if c.MaxReadBytes == 0 {
		c.MaxReadBytes = max(d.MaxReadBytes, int64(c.MaxFrameBytes))
	}
	if c.MaxFirstRequestBytes == 0 {
		c.MaxFirstRequestBytes = min(d.MaxFirstRequestBytes, c.MaxFrameBytes)
	}
	if c.RequestReadTimeout == 0 {
		c.RequestReadTimeout = d.RequestReadTimeout
	}
	if c.MinReadBytesPerSecond == 0 {
		c.MinReadBytesPerSecond = d.MinReadBytesPerSecond
	}
	if c.MaxInFlightRequests == 0 {
		c.MaxInFlightRequests = d.MaxInFlightRequests
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.MaxDecompressedBytes == 0 {
		c.MaxDecompressedBytes = d.MaxDecompressedBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.DefaultProduceTimeout == 0 {
		c.DefaultProduceTimeout = d.DefaultProduceTimeout
	}
	if c.ProducerStateTTL == 0 {
		c.ProducerStateTTL = d.ProducerStateTTL
	}
	if c.MaxProducerStates == 0 {
		c.MaxProducerStates = d.MaxProducerStates
	}
	if c.SASL != nil {
		s := *c.SASL
		ds := DefaultSASLConfig()
		if len(s.Mechanisms) == 0 {
			s.Mechanisms = ds.Mechanisms
		}
		if s.SCRAMIterations == 0 {
			s.SCRAMIterations = ds.SCRAMIterations
		}
		c.SASL = &s
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if c.Memory != nil && c.MaxReadBytes != 0 {
		return errors.New("max read bytes is the limit of the private memory budget: set it or memory, not both")
	}
	c = c.withDefaults()
	switch {
	case c.MaxFrameBytes < 64:
		return fmt.Errorf("max frame bytes %d is below 64", c.MaxFrameBytes)
	case c.MaxReadBytes < int64(c.MaxFrameBytes):
		return fmt.Errorf("max read bytes %d is below max frame bytes %d", c.MaxReadBytes, c.MaxFrameBytes)
	case c.MaxFirstRequestBytes < minFrameBytes:
		return fmt.Errorf("max first request bytes %d is below %d", c.MaxFirstRequestBytes, minFrameBytes)
	case c.MaxFirstRequestBytes > c.MaxFrameBytes:
		return fmt.Errorf("max first request bytes %d exceeds max frame bytes %d", c.MaxFirstRequestBytes, c.MaxFrameBytes)
	case c.MinReadBytesPerSecond < 1:
		return fmt.Errorf("min read bytes per second %d is below 1", c.MinReadBytesPerSecond)
	case c.MaxInFlightRequests < 1:
		return fmt.Errorf("max in-flight requests %d is below 1", c.MaxInFlightRequests)
	case c.MaxMessageBytes < batchHeaderLen:
		return fmt.Errorf("max message bytes %d is below %d", c.MaxMessageBytes, batchHeaderLen)
	case c.MaxMessageBytes > c.MaxFrameBytes:
		return fmt.Errorf("max message bytes %d exceeds max frame bytes %d", c.MaxMessageBytes, c.MaxFrameBytes)
	case c.MaxDecompressedBytes < 1024:
		return fmt.Errorf("max decompressed bytes %d is below 1024", c.MaxDecompressedBytes)
	case c.IdleTimeout < 0 || c.WriteTimeout < 0 || c.DefaultProduceTimeout < 0 || c.ProducerStateTTL < 0 ||
		c.RequestReadTimeout < 0:
		return errors.New("timeouts must not be negative")
	case c.MaxConnections < 0:
		return fmt.Errorf("max connections %d is negative", c.MaxConnections)
	case c.MaxProducerStates < 1:
		return fmt.Errorf("max producer states %d is below 1", c.MaxProducerStates)
	case c.AdvertisedPort < 0 || c.AdvertisedPort > 65535:
		return fmt.Errorf("advertised port %d out of range", c.AdvertisedPort)
	}
	if c.SASL != nil {
		passwords, bearer := false, false
		for _, m := range c.SASL.Mechanisms {
			switch _, scram := scramHashes[m]; {
			case scram || m == MechanismPlain:
				passwords = true
			case m == MechanismOAuthBearer:
				bearer = true
			default:
				return fmt.Errorf("unsupported sasl mechanism %q", m)
			}
		}
		switch {
		case passwords && len(c.SASL.Users) == 0 && c.SASL.Credentials == nil:
			return errors.New("sasl enabled without users")
		case len(c.SASL.Users) > 0 && c.SASL.Credentials != nil:
			return errors.New("sasl users and a credential store are exclusive")
		case bearer && c.SASL.Tokens == nil:
			return errors.New("sasl mechanism OAUTHBEARER without a token validator")
		}
		for _, u := range c.SASL.Users {
			if err := CheckSASLUserName(u.Name); err != nil {
				return fmt.Errorf("sasl user %q: %w", u.Name, err)
			}
		}
	}
	return nil
}

// Option sets a collaborator of the Server.
type Option func(*options)

type options struct {
	logger     *slog.Logger
	registerer prometheus.Registerer
	now        func() time.Time
	ready      func() error
	quota      ProduceQuota
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRegisterer sets where metrics are registered (default: a private
// registry nobody scrapes).
func WithRegisterer(r prometheus.Registerer) Option { return func(o *options) { o.registerer = r } }

// WithClock sets the clock used for producer-state expiry (tests).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithReadyCheck gates the server on ready, which must be cheap and safe for
// concurrent use (it is called for every Metadata, Produce and
// InitProducerId request). While it returns an error, connections are still
// accepted and ApiVersions (and SASL) answered, but Metadata answers every
// asked-for topic with LEADER_NOT_AVAILABLE and an all-topics request with
// no topics, Produce answers every partition NOT_LEADER_OR_FOLLOWER, and an
// idempotent InitProducerId COORDINATOR_LOAD_IN_PROGRESS: all retriable, so
// clients that connect early back off and retry instead of hanging or
// failing. Default: always ready.
func WithReadyCheck(ready func() error) Option { return func(o *options) { o.ready = ready } }
