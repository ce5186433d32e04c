package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/fluss-kafka/gateway/fluss"
)

// workload is one kind of traffic: how its tables look, how its Kafka
// records and its baseline rows are made, and which log end offset the
// table must reach.
type workload string

const (
	workloadJSON   workload = "json"   // JSON values -> log table (ARROW, ZSTD)
	workloadUpsert workload = "upsert" // string key + JSON value -> primary-key table
	workloadRaw    workload = "raw"    // value bytes -> BYTES column of a log table
	workloadAvro   workload = "avro"   // Confluent-framed Avro values (schema registry) -> log table, as json
)

func parseWorkload(s string) (workload, error) {
	switch w := workload(s); w {
	case workloadJSON, workloadUpsert, workloadRaw, workloadAvro:
		return w, nil
	}
	return "", fmt.Errorf("unknown workload %q (json, upsert, raw, avro)", s)
}

// eventColumns are the six columns of the JSON and Avro workloads.
var eventColumns = []fluss.Column{
	{Name: "id", Type: fluss.BigInt().NonNull()},
	{Name: "user_id", Type: fluss.BigInt()},
	{Name: "event", Type: fluss.String()},
	{Name: "amount", Type: fluss.Double()},
	{Name: "ok", Type: fluss.Boolean()},
	{Name: "payload", Type: fluss.String()},
}

func (w workload) descriptor(buckets int) *fluss.TableDescriptor {
	d := &fluss.TableDescriptor{BucketCount: buckets, Properties: map[string]string{}}
	switch w {
	case workloadJSON, workloadAvro:
		d.Schema = fluss.Schema{Columns: eventColumns}
	case workloadUpsert:
		d.Schema = fluss.Schema{Columns: eventColumns, PrimaryKey: []string{"id"}}
	case workloadRaw:
		d.Schema = fluss.Schema{Columns: []fluss.Column{{Name: "payload", Type: fluss.Bytes()}}}
	}
	if w != workloadUpsert {
		d.Properties[fluss.PropLogFormat] = string(fluss.LogFormatArrow)
		d.Properties[fluss.PropArrowCompression] = string(fluss.ArrowCompressionZstd)
	}
	return d
}

// route is the YAML of the route of topic to table.
func (w workload) route(topic string, table fluss.TablePath) string {
	head := fmt.Sprintf("  - topic: %s\n    table: %s\n", topic, table)
	switch w {
	case workloadUpsert:
		return head + "    key:\n      format: string\n      column: id\n    value:\n      format: json\n"
	case workloadRaw:
		return head + "    value:\n      format: raw\n      column: payload\n"
	case workloadAvro:
		return head + "    value:\n      format: avro\n      subject: " + avroSubject + "\n"
	default:
		return head + "    value:\n      format: json\n"
	}
}

// keyed reports whether records carry a key.
func (w workload) keyed() bool { return w == workloadUpsert }

// expectedOffsets is the log end offset (summed over buckets) a table must
// reach after n records with ids id(0..n-1): one change per log record; on
// a primary-key table the first write of a key is +I and every later one
// -U and +U.
func (w workload) expectedOffsets(ids []int64) int64 {
	if w != workloadUpsert {
		return int64(len(ids))
	}
	seen := make(map[int64]struct{}, len(ids))
	var n int64
	for _, id := range ids {
		if _, ok := seen[id]; ok {
			n += 2
		} else {
			seen[id] = struct{}{}
			n++
		}
	}
	return n
}

// The Avro workload's writer schema: the six event columns, none nullable
// (every JSON value has all six fields too). It is seeded into the bench's
// in-process registry under avroSubject with id avroSchemaID; values are
// framed 00 + the 4-byte id (Confluent's serializers).
const (
	avroSubject    = "gwbench-events-value"
	avroSchemaID   = 1
	avroSchemaText = `{"type": "record", "name": "Event", "namespace": "gwbench", "fields": [
  {"name": "id", "type": "long"},
  {"name": "user_id", "type": "long"},
  {"name": "event", "type": "string"},
  {"name": "amount", "type": "double"},
  {"name": "ok", "type": "boolean"},
  {"name": "payload", "type": "string"}]}`
)

var avroSchema = avro.MustParse(avroSchemaText)

// avroEvent is record k for the Avro encoder (hamba/avro, by the tags).
type avroEvent struct {
	ID      int64   `avro:"id"`
	UserID  int64   `avro:"user_id"`
	Event   string  `avro:"event"`
	Amount  float64 `avro:"amount"`
	OK      bool    `avro:"ok"`
	Payload string  `avro:"payload"`
}

// generator makes the record values: ~200-byte JSON objects (or the same
// fields as Avro) whose payload is drawn from a word list, so codecs find
// realistic redundancy.
type generator struct {
	payloads [][]byte
	events   [][]byte
	keySpace int64 // upsert ids cycle through this many keys; 0 = all distinct
}

func newGenerator(payloadLen int, keySpace int64) *generator {
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " +
		"november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu " +
		"checkout cart search login logout view click scroll purchase refund mobile desktop tablet")
	r := rand.New(rand.NewPCG(1, 2))
	g := &generator{keySpace: keySpace}
	for range 4096 {
		var b []byte
		for len(b) < payloadLen {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = append(b, words[r.IntN(len(words))]...)
			if r.IntN(4) == 0 {
				b = strconv.AppendInt(b, int64(r.IntN(100000)), 10)
			}
		}
		g.payloads = append(g.payloads, b[:payloadLen])
	}
	for _, e := range []string{"page_view", "add_to_cart", "checkout", "search", "login"} {
		g.events = append(g.events, []byte(e))
	}
	return g
}

// id is the primary key / id of record k.
func (g *generator) id(k int64) int64 {
	if g.keySpace > 0 {
		return k % g.keySpace
	}
	return k
}

// fields of record k.
func (g *generator) fields(k int64) (id, user int64, event []byte, amount float64, ok bool, payload []byte) {
	h := uint64(k)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	h ^= h >> 29
	id = g.id(k)
	user = int64(h % 1_000_000)
	event = g.events[(h>>20)%uint64(len(g.events))]
	amount = float64((h>>24)%1_000_000) / 100
	ok = (h>>44)&1 == 1
	payload = g.payloads[(h>>32)%uint64(len(g.payloads))]
	return
}

// value appends record k's JSON value to dst.
func (g *generator) value(dst []byte, k int64) []byte {
	id, user, event, amount, ok, payload := g.fields(k)
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"user_id":`...)
	dst = strconv.AppendInt(dst, user, 10)
	dst = append(dst, `,"event":"`...)
	dst = append(dst, event...)
	dst = append(dst, `","amount":`...)
	dst = strconv.AppendFloat(dst, amount, 'f', 2, 64)
	dst = append(dst, `,"ok":`...)
	dst = strconv.AppendBool(dst, ok)
	dst = append(dst, `,"payload":"`...)
	dst = append(dst, payload...)
	dst = append(dst, `"}`...)
	return dst
}

// avroValue appends record k's Confluent-framed Avro value to dst: 00, the
// schema id (big-endian uint32), then the Avro binary of the same fields
// as value. Safe for concurrent use.
func (g *generator) avroValue(dst []byte, k int64) ([]byte, error) {
	id, user, event, amount, ok, payload := g.fields(k)
	b, err := avro.Marshal(avroSchema, &avroEvent{ID: id, UserID: user, Event: string(event), Amount: amount, OK: ok, Payload: string(payload)})
	if err != nil {
		return dst, err
	}
	dst = binary.BigEndian.AppendUint32(append(dst, 0), avroSchemaID)
	return append(dst, b...), nil
}

// kafkaValue appends record k's Kafka value for workload w to dst.
func (g *generator) kafkaValue(w workload, dst []byte, k int64) ([]byte, error) {
	if w == workloadAvro {
		return g.avroValue(dst, k)
	}
	return g.value(dst, k), nil
}

// key appends record k's Kafka key (the decimal id) to dst.
func (g *generator) key(dst []byte, k int64) []byte {
	return strconv.AppendInt(dst, g.id(k), 10)
}

// row fills row (len ≥ 6) with record k as the gateway would convert it
// (the same row for json, upsert and avro); buf receives the raw value for
// workloadRaw and is returned.
func (g *generator) row(w workload, row fluss.Row, buf []byte, k int64) (fluss.Row, []byte) {
	if w == workloadRaw {
		buf = g.value(buf[:0], k)
		row = row[:1]
		row[0] = fluss.BytesDatum(buf)
		return row, buf
	}
	id, user, event, amount, ok, payload := g.fields(k)
	row = row[:6]
	row[0] = fluss.IntDatum(id)
	row[1] = fluss.IntDatum(user)
	row[2] = fluss.BytesDatum(event)
	row[3] = fluss.FloatDatum(amount)
	row[4] = fluss.BoolDatum(ok)
	row[5] = fluss.BytesDatum(payload)
	return row, buf
}
