package fluss

// Cross-checks of our primary-key writes with pyfluss 1.0.0 (the newest
// PyPI Fluss client, pinned in tools/pyfluss/requirements.txt; a Rust core,
// fluss-rust), driven through tools/pyfluss/flusspy.py
// (internal/flusstest.PyFluss) and tools/pyfluss/crosscheck.py (concurrent
// lookups), against the real cluster:
//
//   - TestBucketsOfKeysWrittenByPyFlussAndGoClient: where the same keys land
//     when pyfluss and our client write them, read from the server's side;
//   - TestPyFlussLooksUpEveryScalarTypeWrittenByGo: pyfluss decodes the
//     values we write, of every scalar type;
//   - TestPyFlussReadsGoPartitionedPkTable: a partitioned primary-key table
//     we write reads back in pyfluss (partitions, buckets, offsets, change
//     types, values, lookups).
//
// Finding: pyfluss does NOT put every key where Java (and BucketForKey) puts
// it. Its hash mixes the key's tail bytes zero-extended where Java
// sign-extends them (see xcPyFlussBucket), so keys whose encoded length is
// not a multiple of 4 and whose tail holds a byte >= 0x80 land in another
// bucket about 3 times in 4; that was about 40% of the random composite keys
// here. The key bytes themselves agree (our Lookup finds every pyfluss row by
// our encoding). The tests pin that behaviour key by key, so a pyfluss fix
// shows up as a failure.
//
// pyfluss writes and reads only the COMPACTED kv format (it refuses INDEXED:
// "INDEXED format is not yet supported"), its record rows carry times to
// microseconds (TIMESTAMP values of precision 7..9 are compared truncated to
// microseconds on the pyfluss side), and it prints a zero DECIMAL without
// its scale ("0"), so decimals are compared by value.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fluss-kafka/gateway/internal/flusstest"
)

// xcRowsPerPyCall bounds the rows of one flusspy call, to keep its JSON
// argument well under the kernel's 128 KiB per-argument limit.
const xcRowsPerPyCall = 200

// xcScanRow is one row of flusspy scan-log.
type xcScanRow struct {
	Partition  *string                    `json:"partition"`
	Bucket     int32                      `json:"bucket"`
	Offset     int64                      `json:"offset"`
	ChangeType string                     `json:"change_type"`
	Row        map[string]json.RawMessage `json:"row"`
}

func xcPyScan(t *testing.T, addr string, path TablePath) []xcScanRow {
	t.Helper()
	var out struct {
		Rows []xcScanRow `json:"rows"`
	}
	flusstest.PyFlussJSON(t, &out, addr, "scan-log", "--table", path.String(), "--timeout", "60")
	return out.Rows
}

// xcPyUpsert upserts rows (JSON objects) with pyfluss.
func xcPyUpsert(t *testing.T, addr string, path TablePath, rows []map[string]any) {
	t.Helper()
	for start := 0; start < len(rows); start += xcRowsPerPyCall {
		chunk := rows[start:min(start+xcRowsPerPyCall, len(rows))]
		js, err := json.Marshal(chunk)
		require.NoError(t, err)
		var out struct {
			Upserted int `json:"upserted"`
		}
		flusstest.PyFlussJSON(t, &out, addr, "upsert", "--table", path.String(), "--rows-json", string(js))
		require.Equal(t, len(chunk), out.Upserted)
	}
}

// xcPyLookup looks keys up with pyfluss (tools/pyfluss/crosscheck.py lookup:
// flusspy's lookup through concurrent lookupers); a missing key gives a nil
// row.
func xcPyLookup(t *testing.T, addr string, path TablePath, keys []map[string]any) []map[string]json.RawMessage {
	t.Helper()
	var rows []map[string]json.RawMessage
	for start := 0; start < len(keys); start += xcRowsPerPyCall {
		chunk := keys[start:min(start+xcRowsPerPyCall, len(keys))]
		js, err := json.Marshal(chunk)
		require.NoError(t, err)
		var out struct {
			Rows []map[string]json.RawMessage `json:"rows"`
		}
		xcCrosscheckJSON(t, &out, addr, "lookup", "--table", path.String(), "--keys-json", string(js))
		require.Len(t, out.Rows, len(chunk), "pyfluss lookup answers every key")
		rows = append(rows, out.Rows...)
	}
	return rows
}

// xcCrosscheckJSON runs tools/pyfluss/crosscheck.py COMMAND --bootstrap ADDR
// ARGS... with the pyfluss venv's python (scripts/pyfluss-venv.sh, which
// returns at once when the venv is ready) and decodes its JSON output.
func xcCrosscheckJSON(t *testing.T, v any, addr, command string, args ...string) {
	t.Helper()
	root, err := filepath.Abs("..") // go test runs in the package directory
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	venv := exec.CommandContext(ctx, filepath.Join(root, "scripts", "pyfluss-venv.sh"))
	venv.Stderr = &stderr
	out, err := venv.Output()
	require.NoError(t, err, "scripts/pyfluss-venv.sh: %s", stderr.String())
	python := strings.TrimSpace(string(out))
	require.NotEmpty(t, python, "scripts/pyfluss-venv.sh printed no python path")

	stderr.Reset()
	full := append([]string{filepath.Join(root, "tools", "pyfluss", "crosscheck.py"), command, "--bootstrap", addr}, args...)
	cmd := exec.CommandContext(ctx, python, full...)
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	require.NoError(t, err, "crosscheck.py %s: %s", command, stderr.String())
	dec := json.NewDecoder(bytes.NewReader(out))
	require.NoError(t, dec.Decode(v), "crosscheck.py %s output %q", command, out)
}

// xcPyObject renders the given columns of row as a flusspy JSON object.
func xcPyObject(s *Schema, row Row, columns []string) map[string]any {
	obj := make(map[string]any, len(columns))
	for _, name := range columns {
		i := s.ColumnIndex(name)
		obj[name] = xcPyValue(s.Columns[i].Type, row[i])
	}
	return obj
}

func xcColumnNames(s *Schema) []string {
	out := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		out[i] = c.Name
	}
	return out
}

// xcPyValue is a datum in flusspy's JSON value representation (see the
// table in flusspy.py), as its input accepts it and its output prints it.
func xcPyValue(t DataType, d Datum) any {
	if d.Null {
		return nil
	}
	switch t.Root {
	case TypeBoolean:
		return d.I != 0
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt:
		return d.I
	case TypeFloat:
		return float64(float32(d.F))
	case TypeDouble:
		return d.F
	case TypeDecimal:
		unscaled := big.NewInt(d.I)
		if t.Precision > 18 {
			unscaled = bigFromTwos(d.B)
		}
		return xcDecimalText(unscaled, t.Scale)
	case TypeChar, TypeString:
		return string(d.B)
	case TypeBinary, TypeBytes:
		return base64.StdEncoding.EncodeToString(d.B)
	case TypeDate:
		return time.Unix(d.I*86400, 0).UTC().Format("2006-01-02")
	case TypeTime:
		tm := time.UnixMilli(d.I).UTC()
		return tm.Format("15:04:05") + fmt.Sprintf(".%09d", tm.Nanosecond())
	case TypeTimestamp, TypeTimestampLTZ:
		tm := time.UnixMilli(d.I).UTC().Add(time.Duration(d.N))
		text := tm.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%09d", tm.Nanosecond())
		if t.Root == TypeTimestampLTZ {
			text += "Z"
		}
		return text
	}
	panic("xcPyValue: unexpected type " + t.String())
}

// xcDecimalText renders unscaled/10^scale in plain notation with exactly
// scale fraction digits.
func xcDecimalText(unscaled *big.Int, scale int) string {
	digits := new(big.Int).Abs(unscaled).String()
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	if scale > 0 {
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if unscaled.Sign() < 0 {
		return "-" + digits
	}
	return digits
}

// xcPyMicros is d as pyfluss's record rows carry it: timestamps truncated to
// microseconds (Python datetime).
func xcPyMicros(t DataType, d Datum) Datum {
	if !d.Null && (t.Root == TypeTimestamp || t.Root == TypeTimestampLTZ) {
		d.N -= d.N % 1000
	}
	return d
}

// xcAssertPyValue checks one value printed by flusspy against the datum.
func xcAssertPyValue(t *testing.T, typ DataType, want Datum, raw json.RawMessage, what string) bool {
	t.Helper()
	if raw == nil {
		return assert.Fail(t, "column missing", what)
	}
	want = xcPyMicros(typ, want)
	if want.Null {
		return assert.JSONEq(t, "null", string(raw), what)
	}
	switch typ.Root {
	case TypeTinyInt, TypeSmallInt, TypeInt, TypeBigInt:
		return assert.Equal(t, strconv.FormatInt(want.I, 10), string(raw), what)
	case TypeFloat, TypeDouble:
		got, err := strconv.ParseFloat(string(raw), 64)
		if !assert.NoError(t, err, what) {
			return false
		}
		exp := xcPyValue(typ, want).(float64)
		return assert.Equal(t, math.Float64bits(exp), math.Float64bits(got), "%s: want %v, got %v", what, exp, got)
	case TypeDecimal:
		// by value: pyfluss prints a zero without its scale ("0" for "0.00")
		var text string
		if !assert.NoError(t, json.Unmarshal(raw, &text), what) {
			return false
		}
		got, ok := new(big.Rat).SetString(text)
		if !assert.True(t, ok, "%s: decimal %q", what, text) {
			return false
		}
		exp, _ := new(big.Rat).SetString(xcPyValue(typ, want).(string))
		return assert.Zero(t, exp.Cmp(got), "%s: want %s, got %s", what, exp.FloatString(typ.Scale), text)
	}
	wantJSON, err := json.Marshal(xcPyValue(typ, want))
	require.NoError(t, err)
	return assert.JSONEq(t, string(wantJSON), string(raw), what)
}

// xcDatum returns a random value of t that Python represents: dates and
// timestamps within years 1900..2200. Up to precision 6 pyfluss writes and
// reads the values exactly; TIMESTAMP(7..9) values carry nanoseconds, which
// pyfluss reads truncated to microseconds (write those with our client only).
func xcDatum(r *rand.Rand, t DataType) Datum {
	switch t.Root {
	case TypeBoolean:
		return BoolDatum(r.IntN(2) == 1)
	case TypeTinyInt:
		return IntDatum(int64(int8(r.Uint32())))
	case TypeSmallInt:
		return IntDatum(int64(int16(r.Uint32())))
	case TypeInt:
		// every varint length, both signs
		return IntDatum(int64(int32(r.Uint32()) >> r.IntN(32)))
	case TypeBigInt:
		return IntDatum(int64(r.Uint64()) >> r.IntN(64))
	case TypeFloat:
		return FloatDatum(float64(float32(r.NormFloat64() * 1e4)))
	case TypeDouble:
		return FloatDatum(r.NormFloat64() * 1e12)
	case TypeDecimal:
		digits := make([]byte, 1+r.IntN(t.Precision))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		v, _ := new(big.Int).SetString(string(digits), 10)
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		if t.Precision <= 18 {
			return IntDatum(v.Int64())
		}
		return BytesDatum(bigToTwos(v))
	case TypeChar:
		return StringDatum(randomText(r, r.IntN(t.Length+1)))
	case TypeString:
		return StringDatum(randomText(r, r.IntN(24)))
	case TypeBinary:
		return BytesDatum(xcRandomBytes(r, t.Length))
	case TypeBytes:
		return BytesDatum(xcRandomBytes(r, r.IntN(20)))
	case TypeDate:
		return IntDatum(r.Int64N(109_500) - 25_567) // 1900 .. 2200
	case TypeTime:
		ms := r.Int64N(86_400_000)
		if t.Precision == 0 {
			ms -= ms % 1000
		}
		return IntDatum(ms)
	case TypeTimestamp, TypeTimestampLTZ:
		ms := r.Int64N(9_460_800_000_000) - 2_208_988_800_000 // 1900 .. 2200
		var nanos int32
		switch {
		case t.Precision == 0:
			ms -= ((ms % 1000) + 1000) % 1000
		case t.Precision <= 3:
		case t.Precision <= 6:
			nanos = int32(r.IntN(1000)) * 1000
		default:
			nanos = int32(r.IntN(1_000_000))
		}
		if nanos != 0 && ms < 0 {
			ms = -ms // the Java server rejects sub-millisecond parts before 1970
		}
		return TimestampDatum(ms, nanos)
	}
	panic("xcDatum: unexpected type " + t.String())
}

func xcRandomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// xcPyFlussBucket is the bucket pyfluss 1.0.0 (the newest release) puts a
// key in: fluss-rust's crates/fluss/src/util/murmur_hash.rs
// (fluss_hash_bytes_with_seed) mixes each tail byte ZERO-extended
// (i32::from(u8)), where Java's MurmurHashUtils sign-extends it (Unsafe.getByte
// widened to int). BucketForKey follows Java (byte for byte against the Java
// oracle in record_java_integration_test.go), so the two disagree whenever a
// key's 1..3 tail bytes include one >= 0x80 and that changes the bucket.
// The tests below pin this measured behaviour key by key; once a pyfluss
// release hashes like Java, their "pyfluss bucket" assertions fail and this
// function should become BucketForKey.
func xcPyFlussBucket(key []byte, numBuckets int) int32 {
	h := uint32(flussHashSeed)
	n := len(key) &^ 3
	for i := 0; i < n; i += 4 {
		h = murmurMixH1(h, murmurMixK1(binary.LittleEndian.Uint32(key[i:])))
	}
	for _, b := range key[n:] {
		h = murmurMixH1(h, murmurMixK1(uint32(b)))
	}
	return flussMurmurInt(int32(murmurFmix(h^uint32(len(key))))) % int32(numBuckets)
}

// xcPutRows writes rows (upserts) and deletes (by row index, after the
// upserts) to one partition (or NoPartition) with our client: one KV batch
// and one PutKv per bucket. It returns the bucket of each row.
func xcPutRows(t *testing.T, c *Client, info *TableInfo, partitionID int64, enc *KeyEncoder, rows []Row, deletes []int) []int32 {
	t.Helper()
	ctx := testContext(t)
	s := &info.Descriptor.Schema
	keys := make([][]byte, len(rows))
	buckets := make([]int32, len(rows))
	batches := map[int32]*KvBatchBuilder{}
	batch := func(bucket int32) *KvBatchBuilder {
		if batches[bucket] == nil {
			b, err := NewKvBatchBuilder(s, info.SchemaID, info.Descriptor.KvFormat())
			require.NoError(t, err)
			batches[bucket] = b
		}
		return batches[bucket]
	}
	for i, row := range rows {
		key, err := enc.Encode(nil, row)
		require.NoError(t, err)
		keys[i] = key
		buckets[i] = BucketForKey(key, info.Descriptor.BucketCount)
		require.NoError(t, batch(buckets[i]).Upsert(key, row))
	}
	for _, i := range deletes {
		require.NoError(t, batch(buckets[i]).Delete(keys[i]))
	}
	for bucket, b := range batches {
		records, err := b.AppendTo(nil)
		require.NoError(t, err)
		leader, err := c.BucketLeader(ctx, info.TableID, partitionID, bucket)
		require.NoError(t, err)
		res, err := c.PutKv(ctx, leader.ID, &PutKvRequest{TableID: info.TableID, Acks: -1, Timeout: 30 * time.Second,
			Buckets: []BucketRecords{{PartitionID: partitionID, Bucket: bucket, Records: records}}})
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.NoError(t, res[0].Err, "put_kv bucket %d", bucket)
	}
	return buckets
}

// xcFetchChangelog reads a bucket's whole changelog with our client, up to
// the latest offset.
func xcFetchChangelog(t *testing.T, c *Client, info *TableInfo, partitionID int64, bucket int32) []LogRecord {
	t.Helper()
	ctx := testContext(t)
	offs, err := c.ListOffsets(ctx, info.TableID, partitionID, []int32{bucket}, LatestOffset)
	require.NoError(t, err)
	end := offs[bucket]
	var out []LogRecord
	for next := int64(0); next < end; {
		fetched, err := c.FetchLog(ctx, &FetchLogRequest{TableID: info.TableID,
			Buckets: []FetchBucket{{PartitionID: partitionID, Bucket: bucket, Offset: next}}})
		require.NoError(t, err)
		require.Len(t, fetched, 1)
		require.NoError(t, fetched[0].Err)
		recs, err := DecodeLogBatchesFormat(fetched[0].Records, &info.Descriptor.Schema, info.Descriptor.LogFormat())
		require.NoError(t, err)
		require.NotEmpty(t, recs, "fetch at %d of bucket %d (end %d) returned no records", next, bucket, end)
		for _, r := range recs {
			if r.Offset >= next && r.Offset < end { // a fetch may start inside a batch
				out = append(out, r)
			}
		}
		next = recs[len(recs)-1].Offset + 1
	}
	require.Len(t, out, int(end), "changelog records of bucket %d", bucket)
	return out
}

// xcServerBuckets reads every bucket's changelog of a non-partitioned table
// with our client and returns, per row index (found by its key bytes), the
// bucket the server stored it in; every record must be an insert of a known
// key with the row's values, and every key must appear exactly once.
func xcServerBuckets(t *testing.T, c *Client, info *TableInfo, enc *KeyEncoder, rows []Row, keyIndex map[string]int) []int32 {
	t.Helper()
	got := make([]int32, len(rows))
	for i := range got {
		got[i] = -1
	}
	for bucket := range int32(info.Descriptor.BucketCount) {
		for _, rec := range xcFetchChangelog(t, c, info, NoPartition, bucket) {
			require.Equal(t, ChangeInsert, rec.ChangeType, "bucket %d offset %d", bucket, rec.Offset)
			key, err := enc.Encode(nil, rec.Row)
			require.NoError(t, err)
			i, ok := keyIndex[string(key)]
			require.True(t, ok, "bucket %d offset %d holds an unknown key %x", bucket, rec.Offset, key)
			require.Equal(t, int32(-1), got[i], "key of row %d stored twice", i)
			got[i] = bucket
			requireRowEqual(t, rows[i], rec.Row, fmt.Sprintf("row %d as stored", i))
		}
	}
	for i, b := range got {
		require.NotEqual(t, int32(-1), b, "row %d not in any bucket's changelog", i)
	}
	return got
}

// xcPyBuckets scans a non-partitioned table's changelog with pyfluss and
// returns, per row index (the seqColumn value), the bucket pyfluss read it
// from, checking every column against rows.
func xcPyBuckets(t *testing.T, addr string, info *TableInfo, rows []Row, seqColumn string) []int32 {
	t.Helper()
	s := &info.Descriptor.Schema
	got := make([]int32, len(rows))
	for i := range got {
		got[i] = -1
	}
	scanned := xcPyScan(t, addr, info.Path)
	require.Len(t, scanned, len(rows), "rows pyfluss reads from the changelog of %s", info.Path)
	for _, sr := range scanned {
		require.Nil(t, sr.Partition)
		require.Equal(t, "+I", sr.ChangeType)
		i, err := strconv.Atoi(string(sr.Row[seqColumn]))
		require.NoError(t, err, "column %s = %s", seqColumn, sr.Row[seqColumn])
		require.True(t, i >= 0 && i < len(rows), "row index %d", i)
		require.Equal(t, int32(-1), got[i], "row %d read twice", i)
		got[i] = sr.Bucket
		for j, col := range s.Columns {
			xcAssertPyValue(t, col.Type, rows[i][j], sr.Row[col.Name], fmt.Sprintf("row %d column %s", i, col.Name))
		}
	}
	return got
}

// xcCountMismatches returns how many entries differ, and the first few.
func xcCountMismatches(want, got []int32) (int, string) {
	n := 0
	var first []string
	for i := range want {
		if want[i] != got[i] {
			n++
			if len(first) < 5 {
				first = append(first, fmt.Sprintf("row %d: %d vs %d", i, want[i], got[i]))
			}
		}
	}
	return n, strings.Join(first, "; ")
}

// xcLookupInBuckets looks each key up with our client in the given bucket
// and returns the decoded rows (nil where the bucket does not hold the key).
func xcLookupInBuckets(t *testing.T, c *Client, info *TableInfo, partitionID int64, keys [][]byte, buckets []int32) []Row {
	t.Helper()
	ctx := testContext(t)
	byBucket := map[int32][]int{}
	for i, b := range buckets {
		byBucket[b] = append(byBucket[b], i)
	}
	out := make([]Row, len(keys))
	for bucket, idx := range byBucket {
		lk := make([][]byte, len(idx))
		for j, i := range idx {
			lk[j] = keys[i]
		}
		vals, err := c.Lookup(ctx, info.TableID, partitionID, bucket, lk)
		require.NoError(t, err)
		require.Len(t, vals, len(idx))
		for j, i := range idx {
			if vals[j] == nil {
				continue
			}
			_, row, err := DecodeValueRow(vals[j], &info.Descriptor.Schema, info.Descriptor.KvFormat())
			require.NoError(t, err)
			out[i] = row
		}
	}
	return out
}

// TestBucketsOfKeysWrittenByPyFlussAndGoClient: pyfluss upserts 500 keys of a
// composite primary key into a 4-bucket table, and our client the same rows
// into an identical table. Read from the server's side (FetchLog of every
// bucket's changelog, and pyfluss's changelog scan, which agree):
//
//   - our rows sit in the bucket BucketForKey (= Java) computes;
//   - pyfluss's rows sit in the same bucket for every key whose hash tail is
//     sign-neutral, and for the others (a tail byte >= 0x80 that changes the
//     bucket, about 40% of random keys) in the bucket of pyfluss's
//     zero-extending hash, xcPyFlussBucket: a pyfluss 1.0.0 bug;
//   - pyfluss's key bytes are ours: our Lookup with our encoded key finds
//     every pyfluss row, with pyfluss's values, in the bucket it sits in (and
//     not in BucketForKey's bucket where pyfluss put it elsewhere);
//   - pyfluss's lookups of our rows return our values wherever its bucket
//     function agrees with Java, and nothing where it does not.
func TestBucketsOfKeysWrittenByPyFlussAndGoClient(t *testing.T) {
	keySets := []struct {
		name string
		keys []Column
	}{
		{"int_string_bigint_date", []Column{
			{Name: "k_int", Type: Int().NonNull()},
			{Name: "k_str", Type: String().NonNull()},
			{Name: "k_big", Type: BigInt().NonNull()},
			{Name: "k_day", Type: Date().NonNull()},
		}},
		{"more_key_types", []Column{
			{Name: "k_bool", Type: Boolean().NonNull()},
			{Name: "k_tiny", Type: TinyInt().NonNull()},
			{Name: "k_small", Type: SmallInt().NonNull()},
			{Name: "k_dec", Type: Decimal(10, 2).NonNull()},
			{Name: "k_wide", Type: Decimal(25, 5).NonNull()},
			{Name: "k_ts", Type: Timestamp(6).NonNull()},
			{Name: "k_ltz", Type: TimestampLTZ(3).NonNull()},
			{Name: "k_bytes", Type: Bytes().NonNull()},
		}},
	}
	const buckets, n = 4, 500
	addr := flusstest.Bootstrap(t)
	c := newClusterClient(t)
	var version struct {
		PyFluss string `json:"pyfluss"`
	}
	xcCrosscheckJSON(t, &version, addr, "version")
	t.Logf("pyfluss %s", version.PyFluss)
	require.Equal(t, "1.0.0", version.PyFluss, "xcPyFlussBucket models pyfluss 1.0.0: re-measure it for this version")
	for _, ks := range keySets {
		t.Run(ks.name, func(t *testing.T) {
			schema := Schema{PrimaryKey: make([]string, len(ks.keys))}
			for i, k := range ks.keys {
				schema.PrimaryKey[i] = k.Name
			}
			schema.Columns = append(append(schema.Columns, ks.keys...),
				Column{Name: "v_seq", Type: BigInt().NonNull()}, Column{Name: "v_note", Type: String()})
			seqCol := len(ks.keys)
			pyPath, pyInfo := createTestTable(t, c, TableDescriptor{Schema: schema, BucketCount: buckets})
			_, goInfo := createTestTable(t, c, TableDescriptor{Schema: schema, BucketCount: buckets})
			require.Equal(t, KvFormatCompacted, pyInfo.Descriptor.KvFormat())
			pk, bucketKey := KeyColumns(&pyInfo.Descriptor)
			require.Equal(t, schema.PrimaryKey, pk)
			require.Equal(t, pk, bucketKey)
			enc, err := NewKeyEncoder(&pyInfo.Descriptor.Schema, pk, "")
			require.NoError(t, err)

			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			r := rand.New(rand.NewPCG(seed, 3))
			rows := make([]Row, n)
			keys := make([][]byte, n)
			keyIndex := make(map[string]int, n)
			javaBucket := make([]int32, n) // BucketForKey
			pyBucket := make([]int32, n)   // xcPyFlussBucket
			perBucket := make([]int, buckets)
			differ := 0
			for i := 0; i < n; {
				row := make(Row, len(schema.Columns))
				for j, k := range ks.keys {
					row[j] = xcDatum(r, k.Type)
				}
				row[seqCol] = IntDatum(int64(i))
				row[seqCol+1] = StringDatum(randomText(r, r.IntN(16)))
				key, err := enc.Encode(nil, row)
				require.NoError(t, err)
				if _, dup := keyIndex[string(key)]; dup {
					continue
				}
				rows[i], keys[i], keyIndex[string(key)] = row, key, i
				javaBucket[i] = BucketForKey(key, buckets)
				pyBucket[i] = xcPyFlussBucket(key, buckets)
				perBucket[javaBucket[i]]++
				if pyBucket[i] != javaBucket[i] {
					differ++
				}
				i++
			}
			t.Logf("keys per bucket %v; pyfluss's hash disagrees with Java's on %d of %d keys", perBucket, differ, n)
			for b, cnt := range perBucket {
				require.Positive(t, cnt, "no key in bucket %d", b)
			}
			// Both kinds of key must be well represented for the checks to mean something.
			require.GreaterOrEqual(t, differ, n/10, "keys with a bucket-changing tail byte >= 0x80")
			require.GreaterOrEqual(t, n-differ, n/4, "keys with a sign-neutral tail")

			// 1. pyfluss writes; the server's changelog says where each key went.
			pyRows := make([]map[string]any, n)
			for i, row := range rows {
				pyRows[i] = xcPyObject(&schema, row, xcColumnNames(&schema))
			}
			xcPyUpsert(t, addr, pyPath, pyRows)
			pyStored := xcServerBuckets(t, c, pyInfo, enc, rows, keyIndex)
			mismatches, first := xcCountMismatches(pyBucket, pyStored)
			assert.Zero(t, mismatches, "keys pyfluss put elsewhere than its known bucket function: %s", first)
			same := 0
			for i := range rows {
				if pyStored[i] == javaBucket[i] {
					same++
				}
			}
			t.Logf("pyfluss stored %d of %d keys in BucketForKey's bucket", same, n)
			assert.Equal(t, n-differ, same, "keys pyfluss stored in BucketForKey's bucket")

			// Our Lookup with our key bytes finds each pyfluss row in the bucket it
			// sits in (so the key encodings are identical), and not in BucketForKey's
			// bucket where pyfluss put it elsewhere.
			found := xcLookupInBuckets(t, c, pyInfo, NoPartition, keys, pyStored)
			inJava := xcLookupInBuckets(t, c, pyInfo, NoPartition, keys, javaBucket)
			for i := range rows {
				require.NotNil(t, found[i], "our lookup of row %d (written by pyfluss) in bucket %d", i, pyStored[i])
				requireRowEqual(t, rows[i], found[i], fmt.Sprintf("row %d written by pyfluss, looked up by us", i))
				if pyStored[i] != javaBucket[i] {
					assert.Nil(t, inJava[i], "row %d: pyfluss put it in bucket %d, not in %d", i, pyStored[i], javaBucket[i])
				}
			}

			// 2. Our client writes the same rows to the identical table.
			goBuckets := xcPutRows(t, c, goInfo, NoPartition, enc, rows, nil)
			require.Equal(t, javaBucket, goBuckets)
			goStored := xcServerBuckets(t, c, goInfo, enc, rows, keyIndex)
			require.Equal(t, javaBucket, goStored, "our rows are stored where BucketForKey put them")
			for i := range rows {
				if pyBucket[i] == javaBucket[i] {
					assert.Equal(t, goStored[i], pyStored[i], "row %d: same bucket in both tables", i)
				} else {
					assert.NotEqual(t, goStored[i], pyStored[i], "row %d: pyfluss's bucket differs from ours", i)
				}
			}

			// pyfluss's own changelog scan of both tables reports the same buckets.
			assert.Equal(t, pyStored, xcPyBuckets(t, addr, pyInfo, rows, "v_seq"),
				"buckets of the pyfluss-written table, as pyfluss scans them")
			assert.Equal(t, goStored, xcPyBuckets(t, addr, goInfo, rows, "v_seq"),
				"buckets of the Go-written table, as pyfluss scans them")

			// pyfluss looks up every key we wrote: our values where its bucket
			// function agrees with ours, nothing where it looks in another bucket.
			lookupKeys := make([]map[string]any, n)
			for i, row := range rows {
				lookupKeys[i] = xcPyObject(&schema, row, pk)
			}
			got := xcPyLookup(t, addr, goInfo.Path, lookupKeys)
			for i, row := range got {
				if pyBucket[i] != javaBucket[i] {
					assert.Nil(t, row, "pyfluss lookup of row %d looks in bucket %d, we wrote it to %d", i, pyBucket[i], javaBucket[i])
					continue
				}
				require.NotNil(t, row, "pyfluss lookup of row %d written by us", i)
				for j, col := range schema.Columns {
					xcAssertPyValue(t, col.Type, rows[i][j], row[col.Name], fmt.Sprintf("row %d column %s", i, col.Name))
				}
			}
		})
	}
}

// xcAllScalarSchema: a primary key and one value column of every scalar type
// (several precisions of TIME, TIMESTAMP and TIMESTAMP_LTZ, both DECIMAL
// storage forms).
func xcAllScalarSchema() *Schema {
	s := &Schema{PrimaryKey: []string{"id"}}
	add := func(name string, t DataType) { s.Columns = append(s.Columns, Column{Name: name, Type: t}) }
	add("id", Int().NonNull())
	add("c_bool", Boolean())
	add("c_tinyint", TinyInt())
	add("c_smallint", SmallInt())
	add("c_int", Int())
	add("c_bigint", BigInt())
	add("c_float", Float())
	add("c_double", Double())
	add("c_dec_compact", Decimal(10, 2))
	add("c_dec_wide", Decimal(38, 10))
	add("c_char", Char(6))
	add("c_string", String())
	add("c_binary", Binary(4))
	add("c_bytes", Bytes())
	add("c_date", Date())
	add("c_time0", Time(0))
	add("c_time3", Time(3))
	add("c_ts0", Timestamp(0))
	add("c_ts3", Timestamp(3))
	add("c_ts6", Timestamp(6))
	add("c_ts9", Timestamp(9))
	add("c_ltz3", TimestampLTZ(3))
	add("c_ltz6", TimestampLTZ(6))
	add("c_ltz9", TimestampLTZ(9))
	return s
}

// xcExtremeRow holds each column's extreme values: integer bounds, the
// largest DECIMALs, empty and full-width strings and bytes, the last
// millisecond of the day, the last nanosecond of a millisecond.
func xcExtremeRow(s *Schema, id int64) Row {
	row := make(Row, len(s.Columns))
	row[0] = IntDatum(id)
	for i := 1; i < len(s.Columns); i++ {
		t := s.Columns[i].Type
		switch t.Root {
		case TypeBoolean:
			row[i] = BoolDatum(true)
		case TypeTinyInt:
			row[i] = IntDatum(math.MinInt8)
		case TypeSmallInt:
			row[i] = IntDatum(math.MaxInt16)
		case TypeInt:
			row[i] = IntDatum(math.MinInt32)
		case TypeBigInt:
			row[i] = IntDatum(math.MaxInt64)
		case TypeFloat:
			row[i] = FloatDatum(math.MaxFloat32)
		case TypeDouble:
			row[i] = FloatDatum(-math.SmallestNonzeroFloat64)
		case TypeDecimal:
			limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
			limit.Sub(limit, big.NewInt(1)).Neg(limit)
			if t.Precision <= 18 {
				row[i] = IntDatum(limit.Int64())
			} else {
				row[i] = BytesDatum(bigToTwos(limit))
			}
		case TypeChar:
			row[i] = StringDatum("")
		case TypeString:
			row[i] = StringDatum("\"\\\u0000 é€🙂")
		case TypeBinary:
			row[i] = BytesDatum([]byte{0x00, 0xff, 0x80, 0x7f})
		case TypeBytes:
			row[i] = BytesDatum([]byte{})
		case TypeDate:
			row[i] = IntDatum(-25_567) // 1900-01-01
		case TypeTime:
			row[i] = IntDatum(86_399_000)
			if t.Precision > 0 {
				row[i] = IntDatum(86_399_999)
			}
		case TypeTimestamp, TypeTimestampLTZ:
			nanos := int32(0)
			if t.Precision > 3 {
				nanos = 999_999 - 999_999%int32(math.Pow10(9-t.Precision))
			}
			ms := int64(7_258_118_399_000) // 2199-12-31T23:59:59
			if t.Precision > 0 {
				ms += 999
			}
			row[i] = TimestampDatum(ms, nanos)
		default:
			panic("xcExtremeRow: unexpected type " + t.String())
		}
	}
	return row
}

// TestPyFlussLooksUpEveryScalarTypeWrittenByGo: rows we write (COMPACTED
// values, the default kv format and the only one pyfluss reads) with every
// scalar type, an all-null row and a row of extreme values, looked up by
// pyfluss: pyfluss decodes our value bytes to our values (timestamps of
// precision 7..9 to the microsecond, pyfluss's resolution), and keys we
// never wrote are absent. The ids are those on which pyfluss's bucket
// function agrees with Java's (see xcPyFlussBucket), so that pyfluss looks
// in the bucket we wrote to.
func TestPyFlussLooksUpEveryScalarTypeWrittenByGo(t *testing.T) {
	const buckets, n = 4, 300
	addr := flusstest.Bootstrap(t)
	c := newClusterClient(t)
	path, info := createTestTable(t, c, TableDescriptor{Schema: *xcAllScalarSchema(), BucketCount: buckets})
	require.Equal(t, KvFormatCompacted, info.Descriptor.KvFormat())
	s := &info.Descriptor.Schema
	enc, err := NewKeyEncoder(s, []string{"id"}, "")
	require.NoError(t, err)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 5))
	var ids []int64
	skipped := 0
	seen := map[int64]bool{}
	for len(ids) < n+20 {
		id := xcDatum(r, Int()).I
		key, err := enc.Encode(nil, Row{IntDatum(id)})
		require.NoError(t, err)
		if seen[id] {
			continue
		}
		seen[id] = true
		if BucketForKey(key, buckets) != xcPyFlussBucket(key, buckets) {
			skipped++
			continue
		}
		ids = append(ids, id)
	}
	t.Logf("%d random ids skipped: pyfluss would look them up in another bucket", skipped)
	rows := make([]Row, n)
	for i := range rows {
		switch i {
		case 0:
			rows[i] = make(Row, len(s.Columns))
			for j := 1; j < len(rows[i]); j++ {
				rows[i][j] = NullDatum()
			}
			rows[i][0] = IntDatum(ids[i])
		case 1:
			rows[i] = xcExtremeRow(s, ids[i])
		default:
			rows[i] = make(Row, len(s.Columns))
			rows[i][0] = IntDatum(ids[i])
			for j := 1; j < len(s.Columns); j++ {
				if r.IntN(10) == 0 {
					rows[i][j] = NullDatum()
				} else {
					rows[i][j] = xcDatum(r, s.Columns[j].Type)
				}
			}
		}
	}
	used := xcPutRows(t, c, info, NoPartition, enc, rows, nil)
	perBucket := make([]int, buckets)
	for _, b := range used {
		perBucket[b]++
	}
	for b, cnt := range perBucket {
		require.Positive(t, cnt, "no row in bucket %d", b)
	}

	keys := make([]map[string]any, 0, n+20)
	for _, row := range rows {
		keys = append(keys, xcPyObject(s, row, []string{"id"}))
	}
	for _, id := range ids[n:] { // never written
		keys = append(keys, map[string]any{"id": id})
	}
	got := xcPyLookup(t, addr, path, keys)
	for i, row := range got {
		if i >= n {
			assert.Nil(t, row, "id %d was never written", ids[i])
			continue
		}
		require.NotNil(t, row, "pyfluss lookup of row %d (id %d)", i, ids[i])
		require.Len(t, row, len(s.Columns), "columns of row %d", i)
		for j, col := range s.Columns {
			xcAssertPyValue(t, col.Type, rows[i][j], row[col.Name], fmt.Sprintf("row %d column %s", i, col.Name))
		}
	}
}

// TestPyFlussReadsGoPartitionedPkTable: a primary-key table partitioned by
// region (3 partitions, 3 buckets each), written by our client with the same
// ids in every partition, then a tenth of the keys deleted. pyfluss reads
// it back: its changelog scan finds every change in the partition of its
// region, in the bucket BucketForKey computes from the physical key (the
// primary key without the partition column), with contiguous offsets, +I
// then -D change types and our values; its list-offsets agree per partition
// and bucket; and its lookups find our values (deleted keys absent) wherever
// its bucket function agrees with Java's, nothing elsewhere.
func TestPyFlussReadsGoPartitionedPkTable(t *testing.T) {
	const buckets, perPartition = 3, 100
	regions := []string{"eu", "us", "ap_south"}
	addr := flusstest.Bootstrap(t)
	c := newClusterClient(t)
	ctx := testContext(t)
	schema := Schema{
		Columns: []Column{
			{Name: "id", Type: BigInt().NonNull()},
			{Name: "region", Type: String().NonNull()},
			{Name: "amount", Type: Decimal(12, 3)},
			{Name: "note", Type: String()},
			{Name: "at", Type: TimestampLTZ(6)},
		},
		PrimaryKey: []string{"id", "region"},
	}
	path, info := createTestTable(t, c, TableDescriptor{Schema: schema, PartitionKeys: []string{"region"}, BucketCount: buckets})
	s := &info.Descriptor.Schema
	pk, bucketKey := KeyColumns(&info.Descriptor)
	require.Equal(t, []string{"id"}, pk, "the physical key leaves the partition column out")
	require.Equal(t, pk, bucketKey)
	enc, err := NewKeyEncoder(s, pk, "")
	require.NoError(t, err)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	ids := make([]int64, perPartition)
	seen := map[int64]bool{}
	for i := range ids {
		for ids[i] = xcDatum(r, BigInt()).I; seen[ids[i]]; ids[i] = xcDatum(r, BigInt()).I {
		}
		seen[ids[i]] = true
	}

	type change struct {
		partition string
		bucket    int32
		typ       string // flusspy's change type
		row       Row
	}
	type physical struct {
		partition string
		bucket    int32
	}
	var want []change                     // in write order per (partition, bucket)
	latest := map[physical]int64{}        // expected log end offsets
	current := map[string]map[int64]Row{} // region -> id -> row (nil: deleted)
	for _, region := range regions {
		pid, err := c.EnsurePartition(ctx, path, PartitionSpec{{Key: "region", Value: region}})
		require.NoError(t, err)
		require.NoError(t, c.WaitForTableLeaders(ctx, path, pid))
		rows := make([]Row, perPartition)
		var deletes []int
		current[region] = map[int64]Row{}
		for i, id := range ids {
			rows[i] = Row{IntDatum(id), StringDatum(region), NullDatum(), NullDatum(), NullDatum()}
			for j := 2; j < len(s.Columns); j++ {
				if r.IntN(8) != 0 {
					rows[i][j] = xcDatum(r, s.Columns[j].Type)
				}
			}
			current[region][id] = rows[i]
			if i%10 == 3 {
				deletes = append(deletes, i)
			}
		}
		used := xcPutRows(t, c, info, pid, enc, rows, deletes)
		for i, row := range rows {
			want = append(want, change{region, used[i], "+I", row})
			latest[physical{region, used[i]}]++
		}
		for _, i := range deletes {
			want = append(want, change{region, used[i], "-D", rows[i]})
			latest[physical{region, used[i]}]++
			current[region][ids[i]] = nil
		}
	}
	require.Len(t, latest, len(regions)*buckets, "every bucket of every partition is written")

	// The changelog, as pyfluss scans it.
	scanned := xcPyScan(t, addr, path)
	require.Len(t, scanned, len(want), "changes pyfluss reads")
	got := map[physical][]xcScanRow{}
	for _, sr := range scanned {
		require.NotNil(t, sr.Partition, "a partitioned table's row has a partition")
		var region string
		require.NoError(t, json.Unmarshal(sr.Row["region"], &region))
		require.Equal(t, region, *sr.Partition, "the row's partition is its region")
		k := physical{*sr.Partition, sr.Bucket}
		got[k] = append(got[k], sr)
	}
	next := map[physical]int{}
	for _, w := range want {
		k := physical{w.partition, w.bucket}
		require.Less(t, next[k], len(got[k]), "pyfluss read too few changes of partition %s bucket %d", k.partition, k.bucket)
		sr := got[k][next[k]]
		require.Equal(t, int64(next[k]), sr.Offset, "offsets of partition %s bucket %d are contiguous from 0", k.partition, k.bucket)
		next[k]++
		what := fmt.Sprintf("partition %s bucket %d offset %d", k.partition, k.bucket, sr.Offset)
		require.Equal(t, w.typ, sr.ChangeType, what)
		for j, col := range s.Columns {
			xcAssertPyValue(t, col.Type, w.row[j], sr.Row[col.Name], what+" column "+col.Name)
		}
	}

	// Log end offsets, as pyfluss lists them.
	var offs struct {
		Offsets []struct {
			Partition *string `json:"partition"`
			Bucket    int32   `json:"bucket"`
			Offset    int64   `json:"offset"`
		} `json:"offsets"`
	}
	flusstest.PyFlussJSON(t, &offs, addr, "list-offsets", "--table", path.String())
	require.Len(t, offs.Offsets, len(latest))
	for _, o := range offs.Offsets {
		require.NotNil(t, o.Partition)
		assert.Equal(t, latest[physical{*o.Partition, o.Bucket}], o.Offset, "end offset of partition %s bucket %d", *o.Partition, o.Bucket)
	}

	// Lookups through pyfluss, with the partition column in the key.
	var keys []map[string]any
	var wantRows []Row
	var agree []bool
	for _, region := range regions {
		for _, id := range ids {
			keys = append(keys, map[string]any{"id": id, "region": region})
			wantRows = append(wantRows, current[region][id])
			key, err := enc.Encode(nil, Row{IntDatum(id)})
			require.NoError(t, err)
			agree = append(agree, BucketForKey(key, buckets) == xcPyFlussBucket(key, buckets))
		}
	}
	rows := xcPyLookup(t, addr, path, keys)
	found := 0
	for i, row := range rows {
		if wantRows[i] == nil || !agree[i] {
			assert.Nil(t, row, "key %v: deleted (%t) or looked up in another bucket by pyfluss", keys[i], wantRows[i] == nil)
			continue
		}
		require.NotNil(t, row, "pyfluss lookup of key %v", keys[i])
		for j, col := range s.Columns {
			xcAssertPyValue(t, col.Type, wantRows[i][j], row[col.Name], fmt.Sprintf("key %v column %s", keys[i], col.Name))
		}
		found++
	}
	t.Logf("pyfluss found %d of %d keys (%d deleted)", found, len(keys), len(regions)*perPartition/10)
	require.Positive(t, found)
}
