package credentials

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Mechanisms returns the mechanisms an entry can hold, in the order the
// file lists them (a fresh slice: no package state to change).
func Mechanisms() []string {
	return []string{kafkaproto.MechanismSCRAMSHA256, kafkaproto.MechanismSCRAMSHA512, kafkaproto.MechanismPlain}
}

// MakeEntry derives an entry for each mechanism from password, each with
// a fresh random salt. iterations is the SCRAM or PLAIN iteration count; 0
// means each mechanism's default.
func MakeEntry(mechanisms []string, password []byte, iterations int) (Entry, error) {
	var e Entry
	if len(password) == 0 {
		return e, errors.New("the password is empty")
	}
	if len(mechanisms) == 0 {
		return e, errors.New("no mechanism")
	}
	for _, m := range mechanisms {
		switch {
		case m == kafkaproto.MechanismPlain:
			n := iterations
			if n == 0 {
				n = DefaultPlainIterations
			}
			h, err := newPlainHash(password, n)
			if err != nil {
				return e, err
			}
			e.Plain = &Plain{Hash: h.String()}
		case kafkaproto.IsSCRAM(m):
			n := iterations
			if n == 0 {
				n = DefaultSCRAMIterations
			}
			if n < MinSCRAMIterations || n > MaxSCRAMIterations {
				return e, fmt.Errorf("%s: iterations %d is outside [%d, %d]", m, n, MinSCRAMIterations, MaxSCRAMIterations)
			}
			c, err := kafkaproto.NewSCRAMCredential(m, password, n)
			if err != nil {
				return e, fmt.Errorf("derive %s credential: %w", m, err)
			}
			enc := base64.StdEncoding.EncodeToString
			*e.scram(m) = &SCRAM{Salt: enc(c.Salt), Iterations: n, StoredKey: enc(c.StoredKey), ServerKey: enc(c.ServerKey)}
		default:
			return e, fmt.Errorf("%q is not one of %v", m, Mechanisms())
		}
	}
	return e, nil
}

func newPlainHash(password []byte, iterations int) (plainHash, error) {
	if iterations < MinPlainIterations || iterations > MaxPlainIterations {
		return plainHash{}, fmt.Errorf("PLAIN: iterations %d is outside [%d, %d]", iterations, MinPlainIterations, MaxPlainIterations)
	}
	h := plainHash{iterations: iterations, salt: make([]byte, 16)}
	if _, err := rand.Read(h.salt); err != nil {
		return h, err
	}
	var err error
	if h.hash, err = pbkdf2.Key(sha256.New, string(password), h.salt, iterations, sha256.Size); err != nil {
		return h, fmt.Errorf("hash PLAIN password: %w", err)
	}
	return h, nil
}

// fileHeader starts every file Add writes.
const fileHeader = "# SASL credentials of the gateway's Kafka listeners (listeners[].sasl.credentials_file),\n" +
	"# made by `gateway credentials add`: salted keys and hashes only.\n"

// Add returns the credentials file data (nil or empty: a new file) with
// user's entry merged in: the mechanisms e holds replace the user's, the
// others stay. The existing data must be a valid file; its comments are
// not kept.
func Add(data []byte, user string, e Entry) ([]byte, error) {
	if err := kafkaproto.CheckSASLUserName(user); err != nil {
		return nil, fmt.Errorf("user %q: %w", user, err)
	}
	f := &File{Users: map[string]Entry{}}
	if len(data) > 0 {
		if _, err := Parse(data); err != nil {
			return nil, fmt.Errorf("existing credentials: %w", err)
		}
		var err error
		if f, err = decode(data); err != nil {
			return nil, err
		}
	}
	old := f.Users[user]
	if e.SCRAMSHA256 != nil {
		old.SCRAMSHA256 = e.SCRAMSHA256
	}
	if e.SCRAMSHA512 != nil {
		old.SCRAMSHA512 = e.SCRAMSHA512
	}
	if e.Plain != nil {
		old.Plain = e.Plain
	}
	f.Users[user] = old
	out, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode credentials: %w", err)
	}
	out = append([]byte(fileHeader), out...)
	// What is written must load.
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("the merged file does not parse: %w", err)
	}
	return out, nil
}

// ParseMechanisms checks a list of mechanism names.
func ParseMechanisms(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if !slices.Contains(Mechanisms(), n) {
			return nil, fmt.Errorf("%q is not one of %v", n, Mechanisms())
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// AddToFile merges user's entry into the credentials file at path
// (created when missing) and replaces the file in one rename, so a
// watcher never reads half of it; the file is made mode 0600.
func AddToFile(path, user string, e Entry) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read credentials: %w", err)
	}
	data, err := Add(old, user, e)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing to remove
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	return nil
}
