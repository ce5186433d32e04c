package credentials

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluss-kafka/gateway/kafkaproto"
)

// Store is the credentials of one file in force. It implements
// kafkaproto.CredentialStore: each login reads the set in force, so a
// reload applies to new logins while authenticated connections stay.
type Store struct {
	path string
	log  *slog.Logger
	// reloaded counts reloads of a changed file by result (metrics); nil
	// for none.
	reloaded func(ok bool)

	cur atomic.Pointer[Set]

	mu sync.Mutex // one reload at a time; guards last
	// last is the digest of the content last read (or of the error that
	// stopped the read), so a refused file is logged once, not each poll.
	last [sha256.Size]byte
}

var _ kafkaproto.CredentialStore = (*Store)(nil)

// Open reads the file; a file that does not read or parse is an error.
// reloaded, when not nil, is called after each later reload of a changed
// file.
func Open(path string, log *slog.Logger, reloaded func(ok bool)) (*Store, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	set, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	s := &Store{path: path, log: log, reloaded: reloaded, last: sha256.Sum256(data)}
	s.cur.Store(set)
	return s, nil
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// Users is how many users the credentials in force hold.
func (s *Store) Users() int { return s.cur.Load().Users() }

// SCRAMCredential implements kafkaproto.CredentialStore.
func (s *Store) SCRAMCredential(mechanism, user string) (kafkaproto.SCRAMCredential, bool) {
	return s.cur.Load().SCRAMCredential(mechanism, user)
}

// VerifyPlain implements kafkaproto.CredentialStore.
func (s *Store) VerifyPlain(user string, password []byte) bool {
	return s.cur.Load().VerifyPlain(user, password)
}

// Reload re-reads the file. Unchanged content does nothing; a file that
// does not read or parse keeps the credentials in force and is logged at
// ERROR once per distinct content; a good one replaces them at once.
func (s *Store) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path)
	sum := sha256.Sum256(data)
	if err != nil {
		sum = sha256.Sum256([]byte("read error: " + err.Error()))
	}
	if sum == s.last {
		return
	}
	s.last = sum
	var set *Set
	if err == nil {
		set, err = Parse(data)
	}
	if err != nil {
		s.count(false)
		s.log.Error("sasl credentials file refused; keeping the credentials in force",
			slog.String("path", s.path), slog.Any("err", err))
		return
	}
	s.cur.Store(set)
	s.count(true)
	s.log.Info("sasl credentials reloaded", slog.String("path", s.path), slog.Int("users", set.Users()))
}

func (s *Store) count(ok bool) {
	if s.reloaded != nil {
		s.reloaded(ok)
	}
}

// Watch reloads the file every interval until ctx ends. Polling the
// content sees a Kubernetes Secret update (a swapped ..data symlink,
// whose target files keep old modification times) and needs no
// platform-specific notification API.
func (s *Store) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Reload()
		}
	}
}
