package producerstate

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkFirstLookups, on a real Fluss: n producer-partitions look their
// state up at once (a fleet starting, a gateway restarting), grouped per
// bucket as Store.Lookup does, against one Lookup request per key (how it
// was). Run with -count to alternate the two; compare medians of ns/op.
//
//	go test -run XXX -bench FirstLookups -count 5 ./producerstate
func BenchmarkFirstLookups(b *testing.B) {
	s := openIntegrationStore(b)
	ctx := context.Background()
	if err := s.Open(ctx); err != nil {
		b.Fatal(err)
	}
	gen, err := s.ensure(ctx, s.generation(s.now()))
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	keys := make([]Key, n)
	for i := range keys {
		keys[i] = Key{ProducerID: int64(i), Topic: "fleet", Partition: int32(i % 7)}
	}
	perKey := func(ctx context.Context, k Key) error {
		key, bucket, err := s.key(k, 0)
		if err != nil {
			return err
		}
		_, err = s.Source.Lookup(ctx, s.Info.TableID, gen, bucket, [][]byte{key})
		return err
	}
	grouped := func(ctx context.Context, k Key) error {
		_, _, err := s.Lookup(ctx, k)
		return err
	}
	for _, way := range []struct {
		name   string
		lookup func(context.Context, Key) error
	}{{"grouped", grouped}, {"one-per-key", perKey}} {
		b.Run(fmt.Sprintf("%s/%d", way.name, n), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for _, k := range keys {
					wg.Go(func() {
						if err := way.lookup(ctx, k); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
