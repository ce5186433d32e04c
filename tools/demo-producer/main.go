// Command demo-producer is the Kafka client of the demo (scripts/demo.sh): an
// ordinary franz-go producer (idempotent, acks=all) that writes JSON orders,
// customer upserts and tombstones, clicks and raw log lines to the topics
// routed by configs/gateway.yaml, and a few malformed orders that the
// gateway sends to the dead-letter table. It prints what was acknowledged.
//
//	demo-producer -brokers localhost:9092 -orders 3000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	brokers                         string
	orders, customers, deletes, bad int
	clicks, logs                    int
	compression                     string
	timeout                         time.Duration
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("demo-producer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.brokers, "brokers", "localhost:9092", "the gateway's Kafka address(es), comma-separated")
	fs.IntVar(&o.orders, "orders", 3000, "JSON orders to the topic orders")
	fs.IntVar(&o.bad, "bad-orders", 3, "malformed orders (they land in shop.dead_letters)")
	fs.IntVar(&o.customers, "customers", 200, "customer upserts to the topic customers (keyed by id)")
	fs.IntVar(&o.deletes, "deletes", 20, "tombstones deleting the last customers")
	fs.IntVar(&o.clicks, "clicks", 1000, "clicks over the last three days to the topic clicks")
	fs.IntVar(&o.logs, "logs", 100, "raw log lines to the topic logs.app")
	fs.StringVar(&o.compression, "compression", "snappy", "batch codec: none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "upper bound for producing everything")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := produce(ctx, o, stdout); err != nil {
		fmt.Fprintln(stderr, "demo-producer:", err)
		return 1
	}
	return 0
}

func produce(ctx context.Context, o options, out io.Writer) error {
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	codec, ok := codecs[o.compression]
	if !ok {
		return fmt.Errorf("unknown compression %q", o.compression)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(o.brokers, ",")...),
		kgo.ProducerLinger(10*time.Millisecond),
		kgo.ProducerBatchCompression(codec),
		kgo.ClientID("demo-producer"),
	)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now()
	var recs []*kgo.Record
	names := []string{"Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances"}
	for i := range o.orders {
		v := fmt.Sprintf(`{"order_id": %d, "customer": {"name": %q, "tier": "gold"}, "amount": "%d.%02d", "created_at": %q}`,
			i+1, names[i%len(names)], rng.IntN(500), rng.IntN(100),
			now.Add(-time.Duration(o.orders-i)*time.Second).UTC().Format(time.RFC3339Nano))
		recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "order-%d", i+1), Value: []byte(v)})
	}
	for i := range o.bad {
		recs = append(recs, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "bad-%d", i+1),
			Value:   fmt.Appendf(nil, `{"order_id": "not a number %d", "amount": 1}`, i+1),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("demo-producer")}}})
	}
	for i := range o.customers {
		v := fmt.Sprintf(`{"name": %q, "email": "customer%d@example.com", "updated_at": %d}`,
			fmt.Sprintf("%s %d", names[i%len(names)], i+1), i+1, now.UnixMilli())
		recs = append(recs, &kgo.Record{Topic: "customers", Key: fmt.Appendf(nil, "cust-%d", i+1), Value: []byte(v)})
	}
	for range o.clicks {
		ts := now.Add(-time.Duration(rng.IntN(3*24*3600)) * time.Second)
		v := fmt.Sprintf(`{"user_id": %d, "url": "/product/%d"}`, rng.IntN(1000), rng.IntN(50))
		recs = append(recs, &kgo.Record{Topic: "clicks", Value: []byte(v), Timestamp: ts})
	}
	for i := range o.logs {
		recs = append(recs, &kgo.Record{Topic: "logs.app", Key: fmt.Appendf(nil, "host-%d", i%3),
			Value:   fmt.Appendf(nil, "%s INFO request %d served in %dms", now.UTC().Format(time.RFC3339), i, rng.IntN(90)+1),
			Headers: []kgo.RecordHeader{{Key: "level", Value: []byte("info")}}})
	}

	start := time.Now()
	if err := send(ctx, cl, recs); err != nil {
		return err
	}
	// Tombstones after the upserts, so that they delete.
	var tombstones []*kgo.Record
	for i := max(o.customers-o.deletes, 0); i < o.customers; i++ {
		tombstones = append(tombstones, &kgo.Record{Topic: "customers", Key: fmt.Appendf(nil, "cust-%d", i+1)})
	}
	if err := send(ctx, cl, tombstones); err != nil {
		return err
	}
	elapsed := time.Since(start)

	counts := map[string]int{}
	for _, r := range append(recs, tombstones...) {
		counts[r.Topic]++
	}
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id: %w", err)
	}
	total := len(recs) + len(tombstones)
	fmt.Fprintf(out, "acknowledged %d records in %s (%.0f records/s), producer id %d epoch %d\n",
		total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), id, epoch)
	for _, t := range []string{"orders", "customers", "clicks", "logs.app"} {
		fmt.Fprintf(out, "  %-10s %6d\n", t, counts[t])
	}
	return nil
}

// send produces the records and waits for every acknowledgement.
func send(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, r := range recs {
		wg.Add(1)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if len(errs) < 5 {
					errs = append(errs, fmt.Errorf("produce to %s: %w", r.Topic, err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
