package credentials

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Iteration bounds. SCRAM's are Kafka's (ScramMechanism: 4096 to 16384),
// so a file Kafka would store is accepted and the clients' PBKDF2 stays
// bounded. PLAIN's default is OWASP's for PBKDF2-HMAC-SHA256; a login
// costs the server one hash, so the ceiling bounds what a client can make
// it spend.
const (
	MinSCRAMIterations     = 4096
	MaxSCRAMIterations     = 16384
	DefaultSCRAMIterations = 4096
	MinPlainIterations     = 4096
	MaxPlainIterations     = 10_000_000
	DefaultPlainIterations = 600_000
)

// File is the credentials file: user name → mechanism → credential.
//
//	users:
//	  alice:
//	    SCRAM-SHA-256: {salt: <base64>, iterations: 4096, stored_key: <base64>, server_key: <base64>}
//	    SCRAM-SHA-512: {salt: ..., iterations: ..., stored_key: ..., server_key: ...}
//	    PLAIN: {hash: $pbkdf2-sha256$i=600000$<salt>$<hash>}
type File struct {
	Users map[string]Entry `yaml:"users"`
}

// Entry is one user's credentials, one per mechanism it may use.
type Entry struct {
	SCRAMSHA256 *SCRAM `yaml:"SCRAM-SHA-256,omitempty"`
	SCRAMSHA512 *SCRAM `yaml:"SCRAM-SHA-512,omitempty"`
	Plain       *Plain `yaml:"PLAIN,omitempty"`
}

// SCRAM is a SCRAM credential as Kafka stores it, binary fields in
// standard base64.
type SCRAM struct {
	Salt       string `yaml:"salt"`
	Iterations int    `yaml:"iterations"`
	StoredKey  string `yaml:"stored_key"`
	ServerKey  string `yaml:"server_key"`
}

// Plain is a PLAIN password's hash: $pbkdf2-sha256$i=<iterations>$<salt>$<hash>
// (PHC string format, base64 without padding).
type Plain struct {
	Hash string `yaml:"hash"`
}

func (e *Entry) scram(mechanism string) **SCRAM {
	switch mechanism {
	case kafkaproto.MechanismSCRAMSHA256:
		return &e.SCRAMSHA256
	case kafkaproto.MechanismSCRAMSHA512:
		return &e.SCRAMSHA512
	}
	return nil
}

// Set is the parsed content of a credentials file; it implements
// kafkaproto.CredentialStore and never changes.
type Set struct {
	scram map[string]map[string]kafkaproto.SCRAMCredential // mechanism -> user -> credential
	plain map[string]plainHash
	// decoy is checked for unknown PLAIN users, so that a refusal costs
	// what a wrong password of the costliest user does.
	decoy plainHash
	users int
}

var _ kafkaproto.CredentialStore = (*Set)(nil)

// SCRAMCredential implements kafkaproto.CredentialStore.
func (s *Set) SCRAMCredential(mechanism, user string) (kafkaproto.SCRAMCredential, bool) {
	c, ok := s.scram[mechanism][user]
	return c, ok
}

// VerifyPlain implements kafkaproto.CredentialStore, in constant time for
// a given hash.
func (s *Set) VerifyPlain(user string, password []byte) bool {
	h, ok := s.plain[user]
	if !ok {
		h = s.decoy
	}
	return h.verify(password) && ok
}

// Users is how many users the set holds.
func (s *Set) Users() int { return s.users }

// Parse decodes a credentials file strictly (unknown keys, such as a
// password, are errors) and checks every entry; errors name the user and
// the field.
func Parse(data []byte) (*Set, error) {
	f, err := decode(data)
	if err != nil {
		return nil, err
	}
	s := &Set{scram: map[string]map[string]kafkaproto.SCRAMCredential{}, plain: map[string]plainHash{}, users: len(f.Users)}
	var errs []error
	for _, user := range sortedUsers(f) {
		e := f.Users[user]
		key := fmt.Sprintf("users[%q]", user)
		if err := kafkaproto.CheckSASLUserName(user); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			continue
		}
		if e.SCRAMSHA256 == nil && e.SCRAMSHA512 == nil && e.Plain == nil {
			errs = append(errs, fmt.Errorf("%s: no credential (SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN)", key))
		}
		for _, m := range []string{kafkaproto.MechanismSCRAMSHA256, kafkaproto.MechanismSCRAMSHA512} {
			sc := *e.scram(m)
			if sc == nil {
				continue
			}
			c, err := sc.credential(m)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", key, m, err))
				continue
			}
			if s.scram[m] == nil {
				s.scram[m] = map[string]kafkaproto.SCRAMCredential{}
			}
			s.scram[m][user] = c
		}
		if e.Plain != nil {
			h, err := parsePlainHash(e.Plain.Hash)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.PLAIN.hash: %w", key, err))
				continue
			}
			s.plain[user] = h
			if h.iterations > s.decoy.iterations {
				s.decoy = plainHash{iterations: h.iterations, salt: make([]byte, len(h.salt)), hash: make([]byte, len(h.hash))}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.decoy.iterations == 0 {
		s.decoy = plainHash{iterations: 1, salt: make([]byte, 16), hash: make([]byte, sha256.Size)}
	}
	return s, nil
}

func decode(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the credentials file is empty")
		}
		return nil, fmt.Errorf("decode yaml: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("the credentials file holds more than one yaml document")
	}
	if len(f.Users) == 0 {
		return nil, errors.New("users: at least one user is required")
	}
	return &f, nil
}

func sortedUsers(f *File) []string {
	users := make([]string, 0, len(f.Users))
	for u := range f.Users {
		users = append(users, u)
	}
	slices.Sort(users)
	return users
}

func (sc *SCRAM) credential(mechanism string) (kafkaproto.SCRAMCredential, error) {
	c := kafkaproto.SCRAMCredential{Iterations: sc.Iterations}
	if sc.Iterations < MinSCRAMIterations || sc.Iterations > MaxSCRAMIterations {
		return c, fmt.Errorf("iterations %d is outside [%d, %d]", sc.Iterations, MinSCRAMIterations, MaxSCRAMIterations)
	}
	size := kafkaproto.SCRAMKeySize(mechanism)
	for _, f := range []struct {
		name string
		b64  string
		dst  *[]byte
		size int // 0: any non-empty
	}{{"salt", sc.Salt, &c.Salt, 0}, {"stored_key", sc.StoredKey, &c.StoredKey, size}, {"server_key", sc.ServerKey, &c.ServerKey, size}} {
		b, err := base64.StdEncoding.DecodeString(f.b64)
		switch {
		case err != nil:
			return c, fmt.Errorf("%s: not base64: %w", f.name, err)
		case len(b) == 0:
			return c, fmt.Errorf("%s: required", f.name)
		case f.size != 0 && len(b) != f.size:
			return c, fmt.Errorf("%s: %d bytes, %s keys have %d", f.name, len(b), mechanism, f.size)
		}
		*f.dst = b
	}
	return c, nil
}

// plainHash is a parsed $pbkdf2-sha256$ string.
type plainHash struct {
	iterations int
	salt, hash []byte
}

const plainHashID = "$pbkdf2-sha256$"

var b64 = base64.RawStdEncoding

func parsePlainHash(s string) (plainHash, error) {
	var h plainHash
	rest, ok := strings.CutPrefix(s, plainHashID)
	parts := strings.Split(rest, "$")
	if !ok || len(parts) != 3 || !strings.HasPrefix(parts[0], "i=") {
		return h, errors.New("not a $pbkdf2-sha256$i=<iterations>$<salt>$<hash> string")
	}
	n, err := strconv.Atoi(parts[0][2:])
	if err != nil || n < MinPlainIterations || n > MaxPlainIterations {
		return h, fmt.Errorf("iterations %q is outside [%d, %d]", parts[0][2:], MinPlainIterations, MaxPlainIterations)
	}
	h.iterations = n
	if h.salt, err = b64.DecodeString(parts[1]); err != nil || len(h.salt) < 8 {
		return h, errors.New("the salt is not base64 of at least 8 bytes")
	}
	if h.hash, err = b64.DecodeString(parts[2]); err != nil || len(h.hash) != sha256.Size {
		return h, fmt.Errorf("the hash is not base64 of %d bytes", sha256.Size)
	}
	return h, nil
}

func (h plainHash) String() string {
	return plainHashID + "i=" + strconv.Itoa(h.iterations) + "$" + b64.EncodeToString(h.salt) + "$" + b64.EncodeToString(h.hash)
}

func (h plainHash) verify(password []byte) bool {
	got, err := pbkdf2.Key(sha256.New, string(password), h.salt, h.iterations, len(h.hash))
	return err == nil && subtle.ConstantTimeCompare(got, h.hash) == 1
}
