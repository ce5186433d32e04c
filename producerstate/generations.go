package producerstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/owntable"
)

// Generations sweep the table without deleting a row (the versioned merge
// engine drops deletions): the table is partitioned by generation, the
// wall-clock time divided by Expiration. Commits go to the current
// generation; a lookup reads the previous, current and next ones (the
// next for an instance whose clock runs ahead) and keeps the row with the
// highest version, which is what the versioned merge engine would have
// kept of one table. Generations older than the previous one are dropped
// whole: a producer-partition whose last commit lies there has been silent
// for longer than Expiration, past which Fluss forgets its writer too
// (server.writer-id.expiration-time). A producer that comes back after
// that starts afresh, as with a Kafka broker that expired it.

// DefaultExpiration is Fluss's default server.writer-id.expiration-time.
const DefaultExpiration = 7 * 24 * time.Hour

const genColumn = "generation"

// Source is what the producer-state store needs from Fluss: its table and
// the table's generations (partitions).
type Source interface {
	owntable.Source
	ListPartitionInfos(ctx context.Context, path fluss.TablePath) ([]fluss.PartitionInfo, error)
	CreatePartition(ctx context.Context, path fluss.TablePath, spec fluss.PartitionSpec, ignoreIfExists bool) error
	DropPartition(ctx context.Context, path fluss.TablePath, spec fluss.PartitionSpec, ignoreIfNotExists bool) error
}

// generations is what the store knows of the table's partitions.
type generations struct {
	mu     sync.Mutex
	ids    map[int64]int64 // generation -> partition id, of those that exist
	listed time.Time       // when ids was read from Fluss last
	tended int64           // the generation the next one was made ahead of and old ones dropped for
	busy   bool            // a tend runs
	// listing: a lookup is reading the generations from Fluss.
	listing bool
}

// relistEvery bounds how often a lookup that finds a generation missing
// asks Fluss for the partitions again (another instance may have made it).
const relistEvery = time.Second

func (s *Store) generation(t time.Time) int64 {
	e := s.Expiration
	if e < time.Second {
		e = DefaultExpiration
	}
	return t.UnixNano() / int64(e)
}

func genSpec(g int64) fluss.PartitionSpec {
	return fluss.PartitionSpec{{Key: genColumn, Value: strconv.FormatInt(g, 10)}}
}

// list reads the table's generations from Fluss into what the store
// knows. Called with gens.mu held.
func (s *Store) list(ctx context.Context) error {
	ids, err := s.listed(ctx)
	if err != nil {
		return err
	}
	s.gens.ids, s.gens.listed = ids, time.Now()
	return nil
}

// listed reads the table's generations from Fluss: generation ->
// partition id.
func (s *Store) listed(ctx context.Context) (map[int64]int64, error) {
	parts, err := s.src.ListPartitionInfos(ctx, s.Path)
	if err != nil {
		return nil, fmt.Errorf("list the producer-state generations: %w", err)
	}
	ids := make(map[int64]int64, len(parts))
	for _, p := range parts {
		if g, err := strconv.ParseInt(p.Name, 10, 64); err == nil {
			ids[g] = p.ID
		}
	}
	return ids, nil
}

// existing returns the partition ids of those of gs that exist. A
// generation not known here is looked for in Fluss at most once per
// relistEvery, without holding up the store's other lookups and commits.
func (s *Store) existing(ctx context.Context, gs ...int64) (map[int64]int64, error) {
	known := func() (map[int64]int64, bool) {
		out := make(map[int64]int64, len(gs))
		for _, g := range gs {
			if id, ok := s.gens.ids[g]; ok {
				out[g] = id
			}
		}
		return out, len(out) < len(gs)
	}
	s.gens.mu.Lock()
	out, missing := known()
	relist := missing && !s.gens.listing && time.Since(s.gens.listed) >= relistEvery
	if relist {
		s.gens.listing, s.gens.listed = true, time.Now()
	}
	s.gens.mu.Unlock()
	if !relist {
		return out, nil
	}
	ids, err := s.listed(ctx)
	s.gens.mu.Lock()
	defer s.gens.mu.Unlock()
	s.gens.listing = false
	if err != nil {
		return nil, err
	}
	maps.Copy(s.gens.ids, ids)
	out, _ = known()
	return out, nil
}

// forget drops generation g from what the store knows (Fluss said it no
// longer exists: another instance dropped it).
func (s *Store) forget(g int64) {
	s.gens.mu.Lock()
	delete(s.gens.ids, g)
	s.gens.mu.Unlock()
}

// ensure returns generation g's partition id, making the partition when
// it is missing and waiting for its buckets' leaders.
//
// A partition made here whose buckets get no leader within
// newPartitionOnline (Store.partitionOnline) is dropped and made again, at most remakeAttempts
// times: Fluss 0.9.1's coordinator can handle a new partition before the
// new table it belongs to (a NullPointerException on the table's path in
// TableBucketStateMachine), and then never tells the tablet servers to
// serve its buckets, which answer NOT_LEADER_OR_FOLLOWER for good. Such a
// partition holds nothing (no bucket ever took a write), so making it
// again loses nothing.
func (s *Store) ensure(ctx context.Context, g int64) (int64, error) {
	s.gens.mu.Lock()
	defer s.gens.mu.Unlock()
	if id, ok := s.gens.ids[g]; ok {
		return id, nil
	}
	if err := s.list(ctx); err != nil {
		return 0, err
	}
	made := false
	if _, ok := s.gens.ids[g]; !ok {
		var err error
		if made, err = s.make(ctx, g); err != nil {
			return 0, err
		}
	}
	// A partition made here is seen through even if the caller gives up:
	// otherwise the next caller, finding it made, would wait on it for good.
	mctx := context.WithoutCancel(ctx)
	for attempt := 0; ; attempt++ {
		id, ok := s.gens.ids[g]
		if !ok {
			return 0, fmt.Errorf("producer-state generation %d: made, but not listed", g)
		}
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if made {
			wctx, cancel = context.WithTimeout(mctx, s.partitionOnline)
		}
		err := s.src.WaitForTableLeaders(wctx, s.Path, id)
		cancel()
		if err == nil {
			return id, nil
		}
		delete(s.gens.ids, g) // waited for again by the next caller
		if !made || attempt >= remakeAttempts {
			return 0, fmt.Errorf("producer-state generation %d: %w", g, err)
		}
		s.Log.Warn("producer-state generation made here has no bucket leaders; dropping and making it again (Fluss coordinator missed the new partition)",
			slog.Int64("generation", g), slog.Int64("partition_id", id), slog.Duration("waited", s.partitionOnline), slog.Any("err", err))
		dctx, cancel := context.WithTimeout(mctx, s.partitionOnline)
		err = s.src.DropPartition(dctx, s.Path, genSpec(g), true)
		if err == nil {
			made, err = s.make(dctx, g)
		}
		cancel()
		if err != nil {
			return 0, fmt.Errorf("make producer-state generation %d again: %w", g, err)
		}
	}
}

// newPartitionOnline bounds the wait for the bucket leaders of a partition
// this store just made, and remakeAttempts how often one that gets none is
// made again (ensure).
const (
	newPartitionOnline = 30 * time.Second
	remakeAttempts     = 2
)

// make creates generation g's partition and lists the generations again;
// made reports whether this call created it (false: it existed already).
func (s *Store) make(ctx context.Context, g int64) (made bool, err error) {
	switch err := s.src.CreatePartition(ctx, s.Path, genSpec(g), false); {
	case err == nil:
		made = true
	case !errors.Is(err, fluss.ErrPartitionAlreadyExists):
		return false, fmt.Errorf("make producer-state generation %d: %w", g, err)
	}
	return made, s.list(ctx)
}

// tend makes the generation after g ahead of time, so that commits do not
// wait for it when the clock reaches it, and drops the generations before
// g-1. Once per generation per instance, in the background, until the
// clock's generation is tended; instances doing it at once is harmless
// (both calls ignore what is done already).
func (s *Store) tend(g int64) {
	s.gens.mu.Lock()
	if s.gens.busy || s.gens.tended >= g {
		s.gens.mu.Unlock()
		return
	}
	s.gens.busy = true
	s.gens.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			err := s.tendNow(ctx, g)
			s.gens.mu.Lock()
			if err == nil {
				s.gens.tended = g
			}
			now := s.generation(s.now())
			if err != nil || now <= g {
				s.gens.busy = false
				s.gens.mu.Unlock()
				if err != nil {
					s.Log.Warn("producer-state generations not tended; tried again with the next commit", slog.Int64("generation", g), slog.Any("err", err))
				}
				return
			}
			g = now // the clock moved on meanwhile
			s.gens.mu.Unlock()
		}
	}()
}

func (s *Store) tendNow(ctx context.Context, g int64) error {
	s.gens.mu.Lock()
	err := s.list(ctx)
	s.gens.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := s.ensure(ctx, g+1); err != nil {
		return err
	}
	s.gens.mu.Lock()
	var old []int64
	for o := range s.gens.ids {
		if o < g-1 {
			old = append(old, o)
		}
	}
	s.gens.mu.Unlock()
	for _, o := range old {
		if err := s.src.DropPartition(ctx, s.Path, genSpec(o), true); err != nil && !errors.Is(err, fluss.ErrPartitionNotExists) {
			return fmt.Errorf("drop producer-state generation %d: %w", o, err)
		}
		s.gens.mu.Lock()
		delete(s.gens.ids, o)
		s.gens.mu.Unlock()
		s.Log.Info("producer-state generation dropped: its producers were silent past the expiration",
			slog.Int64("generation", o), slog.Duration("expiration", s.Expiration))
	}
	return nil
}
