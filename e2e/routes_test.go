package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fluss-kafka/gateway/fluss"
)

// routeTables are the tables of TestRoutes, as "db.table".
type routeTables struct {
	orders, deadLetters, customers, clicks, rawLogs, events string
}

func createRouteTables(t *testing.T, e *env) routeTables {
	t.Helper()
	return routeTables{
		orders: e.createTable(t, table{name: "orders", buckets: 3, columns: []fluss.Column{
			col("order_id", fluss.BigInt()),
			col("customer", fluss.String()),
			col("amount", fluss.Decimal(10, 2)),
			col("created_at", fluss.TimestampLTZ(3)),
			col("kafka_ts", fluss.TimestampLTZ(3)),
			col("kafka_partition", fluss.Int()),
		}}),
		deadLetters: e.createTable(t, table{name: "dead_letters", buckets: 1, columns: []fluss.Column{
			col("kafka_topic", fluss.String()),
			col("kafka_partition", fluss.Int()),
			col("kafka_offset", fluss.BigInt()),
			col("kafka_timestamp", fluss.TimestampLTZ(3)),
			col("kafka_key", fluss.Bytes()),
			col("kafka_value", fluss.Bytes()),
			col("kafka_headers", fluss.String()),
			col("route", fluss.String()),
			col("reason", fluss.String()),
		}}),
		customers: e.createTable(t, table{name: "customers", buckets: 3, primaryKey: []string{"id"}, columns: []fluss.Column{
			col("id", fluss.String().NonNull()),
			col("name", fluss.String()),
			col("email", fluss.String()),
			col("updated_at", fluss.BigInt()),
		}}),
		clicks: e.createTable(t, table{name: "clicks", buckets: 2, partition: []string{"dt"}, columns: []fluss.Column{
			col("user_id", fluss.BigInt()),
			col("url", fluss.String()),
			col("dt", fluss.String()),
		}}),
		rawLogs: e.createTable(t, table{name: "raw_logs", buckets: 2, columns: []fluss.Column{
			col("payload", fluss.Bytes()),
			col("topic", fluss.String()),
			col("headers", fluss.String()),
			col("kafka_key", fluss.Bytes()),
		}}),
		events: e.createTable(t, table{name: "events", buckets: 1, columns: []fluss.Column{
			col("id", fluss.BigInt()),
			col("codec", fluss.String()),
		}}),
	}
}

func (rt routeTables) routes() string {
	return fmt.Sprintf(`  - topic: orders
    table: %s
    value:
      format: json
      columns:
        customer: customer.name
    metadata:
      timestamp: kafka_ts
      partition: kafka_partition
    errors:
      mode: dlq
      dlq_table: %s
  - topic: customers
    table: %s
    key:
      format: string
      column: id
    value:
      format: json
      unknown_fields: reject
    tombstone: delete
    errors:
      mode: reject
  - topic: clicks
    table: %s
    partition:
      - column: dt
        from: timestamp
        format: yyyyMMdd
        time_zone: UTC
  - name: raw-logs
    pattern: 'logs\..+'
    table: %s
    value:
      format: raw
      column: payload
    metadata:
      topic: topic
      headers: headers
      headers_format: json
      key: kafka_key
  - topic: kcat
    table: %s
`, rt.orders, rt.deadLetters, rt.customers, rt.clicks, rt.rawLogs, rt.events)
}

// ltz renders epoch millis as flusspy renders TIMESTAMP_LTZ.
func ltz(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// TestRoutes drives one gateway through every kind of route and checks each
// row read back out of Fluss, then the gateway's counters.
func TestRoutes(t *testing.T) {
	e := newEnv(t)
	tables := createRouteTables(t, e)
	g := startGateway(t, gatewayConfig{Bootstrap: e.Bootstrap, Routes: tables.routes()})
	cl := newProducer(t, g.KafkaAddr)

	// What each subtest got acknowledged, for the metrics check.
	type counts struct{ routeRecords, tableRows map[string]int }
	sent := counts{routeRecords: map[string]int{}, tableRows: map[string]int{}}

	t.Run("json log route", func(t *testing.T) {
		const n = 300
		base := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC).UnixMilli()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			v := fmt.Sprintf(`{"order_id": %d, "customer": {"name": "cust-%d"}, "amount": %d.%02d, "created_at": "2024-01-02T03:04:05.%03dZ", "extra": [1,2]}`,
				i, i%7, i, i%100, i%1000)
			recs[i] = &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "o-%d", i), Value: []byte(v), Timestamp: time.UnixMilli(base + int64(i))}
		}
		produceAll(t, cl, recs...)
		sent.routeRecords["orders"] += n
		sent.tableRows[tables.orders] += n

		rows := e.scanLog(t, tables.orders)
		require.Len(t, rows, n)
		seen := make(map[int64]bool)
		for _, r := range rows {
			id := num(t, r.Row, "order_id")
			require.False(t, seen[id], "order %d read twice", id)
			seen[id] = true
			require.GreaterOrEqual(t, id, int64(0))
			require.Less(t, id, int64(n))
			rec := recs[id]
			assert.Equal(t, "+A", r.ChangeType)
			assert.Equal(t, fmt.Sprintf("cust-%d", id%7), str(t, r.Row, "customer"))
			assert.Equal(t, fmt.Sprintf("%d.%02d", id, id%100), str(t, r.Row, "amount"))
			assert.Equal(t, fmt.Sprintf("2024-01-02T03:04:05.%03d000000Z", id%1000), str(t, r.Row, "created_at"))
			assert.Equal(t, ltz(base+id), str(t, r.Row, "kafka_ts"))
			// A log table without a bucket key keeps Kafka partition = Fluss bucket.
			assert.Equal(t, int64(rec.Partition), num(t, r.Row, "kafka_partition"))
			assert.Equal(t, rec.Partition, r.Bucket, "order %d", id)
			assert.Nil(t, r.Partition)
		}

		// The Go client's FetchLog reads the same rows at the same positions.
		fetched, schema := e.fetchLog(t, tables.orders)
		require.Len(t, fetched, n)
		idCol, custCol := schema.ColumnIndex("order_id"), schema.ColumnIndex("customer")
		byPos := make(map[[2]int64]int64, len(rows))
		for _, r := range rows {
			byPos[[2]int64{int64(r.Bucket), r.Offset}] = num(t, r.Row, "order_id")
		}
		for _, f := range fetched {
			id := f.row[idCol].I
			assert.Equal(t, byPos[[2]int64{int64(f.bucket), f.offset}], id, "bucket %d offset %d", f.bucket, f.offset)
			assert.Equal(t, fmt.Sprintf("cust-%d", id%7), string(f.row[custCol].B))
		}
	})

	t.Run("dlq mode", func(t *testing.T) {
		good := &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(`{"order_id": 100000, "amount": 1}`)}
		bad := &kgo.Record{Topic: "orders", Key: []byte("bad-key"), Value: []byte(`{"order_id": 100001, "amount": `),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-1")}}, Timestamp: time.UnixMilli(1700000000123)}
		produceAll(t, cl, good, bad)
		sent.routeRecords["orders"] += 2
		sent.tableRows[tables.orders]++
		sent.tableRows[tables.deadLetters]++

		dead := e.scanLog(t, tables.deadLetters)
		require.Len(t, dead, 1)
		d := dead[0].Row
		assert.Equal(t, "orders", str(t, d, "kafka_topic"))
		assert.Equal(t, int64(bad.Partition), num(t, d, "kafka_partition"))
		assert.Equal(t, base64.StdEncoding.EncodeToString(bad.Value), str(t, d, "kafka_value"))
		assert.Equal(t, base64.StdEncoding.EncodeToString(bad.Key), str(t, d, "kafka_key"))
		assert.Equal(t, ltz(1700000000123), str(t, d, "kafka_timestamp"))
		assert.JSONEq(t, `{"trace":"t-1"}`, str(t, d, "kafka_headers"))
		assert.Equal(t, "orders", str(t, d, "route"))
		assert.NotEmpty(t, str(t, d, "reason"))

		var found bool
		for _, r := range e.scanLog(t, tables.orders) {
			if num(t, r.Row, "order_id") == 100000 {
				found = true
				assert.Equal(t, "1.00", str(t, r.Row, "amount"))
				assert.True(t, isNull(r.Row, "customer"))
			}
			assert.NotEqual(t, int64(100001), num(t, r.Row, "order_id"))
		}
		assert.True(t, found, "the valid record of the batch is in the table")
	})

	t.Run("primary key route: upsert and delete", func(t *testing.T) {
		const n = 50
		upsert := func(i int, name string) *kgo.Record {
			return &kgo.Record{Topic: "customers", Key: fmt.Appendf(nil, "c-%d", i),
				Value: fmt.Appendf(nil, `{"name": %q, "email": "c%d@example.com", "updated_at": %d}`, name, i, i)}
		}
		first := make([]*kgo.Record, n)
		for i := range first {
			first[i] = upsert(i, fmt.Sprintf("first-%d", i))
		}
		produceAll(t, cl, first...)
		var second []*kgo.Record
		for i := range 10 {
			second = append(second, upsert(i, fmt.Sprintf("second-%d", i)))
		}
		produceAll(t, cl, second...)
		var tombstones []*kgo.Record
		for i := 40; i < n; i++ {
			tombstones = append(tombstones, &kgo.Record{Topic: "customers", Key: fmt.Appendf(nil, "c-%d", i)})
		}
		produceAll(t, cl, tombstones...)
		total := len(first) + len(second) + len(tombstones)
		sent.routeRecords["customers"] += total
		sent.tableRows[tables.customers] += total

		keys := make([]map[string]any, n)
		for i := range keys {
			keys[i] = map[string]any{"id": fmt.Sprintf("c-%d", i)}
		}
		rows := e.lookup(t, tables.customers, keys)
		for i, row := range rows {
			switch {
			case i >= 40:
				assert.Nil(t, row, "c-%d was deleted by a tombstone", i)
			default:
				require.NotNil(t, row, "c-%d", i)
				want := fmt.Sprintf("first-%d", i)
				if i < 10 {
					want = fmt.Sprintf("second-%d", i)
				}
				assert.Equal(t, fmt.Sprintf("c-%d", i), str(t, row, "id"))
				assert.Equal(t, want, str(t, row, "name"))
				assert.Equal(t, fmt.Sprintf("c%d@example.com", i), str(t, row, "email"))
				assert.Equal(t, int64(i), num(t, row, "updated_at"))
			}
		}
	})

	t.Run("reject mode", func(t *testing.T) {
		ts := time.Now()
		batch := recordBatch(ts,
			rawRecord{key: []byte("rj-0"), value: []byte(`{"name": "ok"}`)},
			rawRecord{key: []byte("rj-1"), value: []byte(`{"name": `)},
			rawRecord{key: []byte("rj-2"), value: []byte(`{"name": "ok too"}`)},
		)
		p := produceRaw(t, g.KafkaAddr, "customers", 0, batch)
		require.Equal(t, kerr.InvalidRecord.Code, p.ErrorCode, "partition error: %v", kerr.ErrorForCode(p.ErrorCode))
		require.Len(t, p.ErrorRecords, 1)
		assert.Equal(t, int32(1), p.ErrorRecords[0].RelativeOffset)
		require.NotNil(t, p.ErrorRecords[0].ErrorMessage)
		assert.NotEmpty(t, *p.ErrorRecords[0].ErrorMessage)
		t.Logf("record error: %s", *p.ErrorRecords[0].ErrorMessage)

		// Kafka batches are atomic: the valid records of the batch are not written.
		rows := e.lookup(t, tables.customers, []map[string]any{{"id": "rj-0"}, {"id": "rj-2"}})
		assert.Nil(t, rows[0])
		assert.Nil(t, rows[1])

		// The same bad record through a Kafka client: the produce fails with INVALID_RECORD.
		plain := newProducer(t, g.KafkaAddr, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
		err := plain.ProduceSync(t.Context(), &kgo.Record{Topic: "customers", Key: []byte("rj-3"), Value: []byte("nope")}).FirstErr()
		require.ErrorIs(t, err, kerr.InvalidRecord)
	})

	t.Run("partitioned route", func(t *testing.T) {
		days := []time.Time{
			time.Date(2024, 1, 2, 23, 59, 59, 0, time.UTC),
			time.Date(2024, 3, 4, 0, 0, 1, 0, time.UTC),
		}
		const perDay = 20
		var recs []*kgo.Record
		for d, day := range days {
			for i := range perDay {
				id := d*1000 + i
				recs = append(recs, &kgo.Record{Topic: "clicks", Timestamp: day,
					Value: fmt.Appendf(nil, `{"user_id": %d, "url": "/p/%d"}`, id, id)})
			}
		}
		produceAll(t, cl, recs...)
		sent.routeRecords["clicks"] += len(recs)
		sent.tableRows[tables.clicks] += len(recs)

		rows := e.scanLog(t, tables.clicks)
		require.Len(t, rows, len(recs))
		perPartition := map[string]int{}
		for _, r := range rows {
			id := num(t, r.Row, "user_id")
			want := days[id/1000].Format("20060102")
			require.NotNil(t, r.Partition)
			assert.Equal(t, want, *r.Partition, "user %d", id)
			assert.Equal(t, want, str(t, r.Row, "dt"))
			assert.Equal(t, fmt.Sprintf("/p/%d", id), str(t, r.Row, "url"))
			perPartition[*r.Partition]++
		}
		assert.Equal(t, map[string]int{"20240102": perDay, "20240304": perDay}, perPartition)
	})

	t.Run("raw route", func(t *testing.T) {
		type want struct{ topic, payload, key, header string }
		wants := map[string]want{}
		var recs []*kgo.Record
		for _, topic := range []string{"logs.app", "logs.web"} {
			for i := range 10 {
				payload := []byte{0xff, 0x00, byte(i), '\n'}
				payload = append(payload, topic...)
				hv := fmt.Sprintf("v-%d", i)
				recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%d", i), Value: payload,
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(hv)}}})
				b64 := base64.StdEncoding.EncodeToString(payload)
				wants[b64] = want{topic: topic, payload: b64, key: base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "k-%d", i)), header: hv}
			}
		}
		produceAll(t, cl, recs...)
		sent.routeRecords["raw-logs"] += len(recs)
		sent.tableRows[tables.rawLogs] += len(recs)

		rows := e.scanLog(t, tables.rawLogs)
		require.Len(t, rows, len(recs))
		for _, r := range rows {
			p := str(t, r.Row, "payload")
			w, ok := wants[p]
			require.True(t, ok, "unexpected payload %s", p)
			delete(wants, p)
			assert.Equal(t, w.topic, str(t, r.Row, "topic"))
			assert.Equal(t, w.key, str(t, r.Row, "kafka_key"))
			var h map[string]string
			require.NoError(t, json.Unmarshal([]byte(str(t, r.Row, "headers")), &h))
			assert.Equal(t, map[string]string{"h": w.header}, h)
		}
		assert.Empty(t, wants)
	})

	t.Run("acks=0", func(t *testing.T) {
		noAck := newProducer(t, g.KafkaAddr, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		const n = 30
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: "logs.noack", Value: fmt.Appendf(nil, "noack-%d", i)})
		}
		produceAll(t, noAck, recs...)
		sent.routeRecords["raw-logs"] += n
		sent.tableRows[tables.rawLogs] += n

		// Nothing tells the producer when the rows are written: wait for them.
		want := n + 20 // the raw route subtest wrote 20 rows before
		var rows []scannedRow
		require.NoError(t, waitFor(t.Context(), time.Minute, func() bool {
			rows = e.scanLog(t, tables.rawLogs)
			return len(rows) >= want
		}), "rows of acks=0 records not in Fluss")
		require.Len(t, rows, want)
		seen := map[string]bool{}
		for _, r := range rows {
			if str(t, r.Row, "topic") == "logs.noack" {
				p, err := base64.StdEncoding.DecodeString(str(t, r.Row, "payload"))
				require.NoError(t, err)
				seen[string(p)] = true
			}
		}
		for i := range n {
			assert.True(t, seen[fmt.Sprintf("noack-%d", i)], "noack-%d", i)
		}
	})

	t.Run("kcat codecs", func(t *testing.T) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			t.Fatalf("kcat not installed (apt-get install kcat): %v", err)
		}
		codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
		const perCodec = 25
		for c, codec := range codecs {
			var in bytes.Buffer
			for i := range perCodec {
				fmt.Fprintf(&in, `{"id": %d, "codec": %q}`+"\n", c*1000+i, codec)
			}
			cmd := exec.Command(kcat, "-P", "-b", g.KafkaAddr, "-t", "kcat", "-z", codec,
				"-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=20")
			cmd.Stdin = &in
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "kcat -z %s: %s", codec, out)
			require.NotContains(t, string(out), "ERROR", "kcat -z %s", codec)
		}
		total := len(codecs) * perCodec
		sent.routeRecords["kcat"] += total
		sent.tableRows[tables.events] += total

		rows := e.scanLog(t, tables.events)
		require.Len(t, rows, total)
		got := map[string][]int64{}
		for _, r := range rows {
			codec := str(t, r.Row, "codec")
			got[codec] = append(got[codec], num(t, r.Row, "id"))
		}
		for c, codec := range codecs {
			require.Len(t, got[codec], perCodec, "codec %s", codec)
			for i, id := range got[codec] { // one bucket: produce order
				assert.Equal(t, int64(c*1000+i), id, "codec %s", codec)
			}
		}
	})

	t.Run("metrics match what was sent", func(t *testing.T) {
		m := g.RequireMetrics(t)
		for route, n := range sent.routeRecords {
			assert.Equal(t, float64(n), m.Sum("fluss_gateway_route_records_total", fmt.Sprintf(`route="%s"`, route)), "route %s", route)
		}
		for table, n := range sent.tableRows {
			assert.Equal(t, float64(n), m.Sum("fluss_gateway_sender_records_total", fmt.Sprintf(`table="%s"`, table)), "table %s", table)
		}
		assert.Equal(t, float64(4), m.Sum("fluss_gateway_route_rejected_records_total", `route="customers"`),
			"3 records of the raw batch and 1 of the kgo produce")
		assert.Equal(t, float64(1), m.Sum("fluss_gateway_route_dead_letter_records_total", `route="orders"`))
		// kafkaproto counts records handed to the sink by topic, rejected batches included.
		assert.Equal(t, float64(sent.routeRecords["orders"]), m.Sum("fluss_gateway_kafka_produce_records_total", `topic="orders"`))
		assert.Equal(t, float64(sent.routeRecords["customers"]+4), m.Sum("fluss_gateway_kafka_produce_records_total", `topic="customers"`))
		assert.Equal(t, float64(sent.routeRecords["kcat"]), m.Sum("fluss_gateway_kafka_produce_records_total", `topic="kcat"`))
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
			assert.Positive(t, m.Sum("fluss_gateway_kafka_produce_batch_bytes_total", `topic="kcat"`, fmt.Sprintf(`codec="%s"`, codec)), "codec %s", codec)
		}
		assert.Positive(t, m.Sum("fluss_gateway_kafka_requests_total"))
		assert.Positive(t, m.Sum("fluss_gateway_kafka_connections_total"))
		assert.Positive(t, m.Sum("fluss_gateway_sender_request_duration_seconds_count"))
		// Everything acknowledged: nothing buffered or in flight.
		assert.Zero(t, m.Sum("fluss_gateway_accumulator_buffer_bytes"))
		assert.Zero(t, m.Sum("fluss_gateway_accumulator_incomplete_batches"))
		assert.Zero(t, m.Sum("fluss_gateway_sender_inflight_requests"))
		assert.Equal(t, float64(5), m.Sum("fluss_gateway_routes"))

		// docs/metrics.md lists every metric the gateway exports.
		doc, err := os.ReadFile("../docs/metrics.md")
		require.NoError(t, err)
		for series := range m {
			name, _, _ := strings.Cut(series, "{")
			if !strings.HasPrefix(name, "fluss_gateway_") {
				continue
			}
			documented := func(n string) bool { return strings.Contains(string(doc), "`"+n+"`") }
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok && !documented(name) {
					base = b
				}
			}
			assert.True(t, documented(base), "metric %s is not in docs/metrics.md", base)
		}
		if t.Failed() {
			var lines []string
			for k, v := range m {
				if strings.HasPrefix(k, "fluss_gateway_") {
					lines = append(lines, fmt.Sprintf("%s %v", k, v))
				}
			}
			t.Logf("scrape:\n%s", strings.Join(lines, "\n"))
		}
	})

	g.RequireStop(t)
}
