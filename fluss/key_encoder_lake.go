package fluss

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Key encodings of tables with a data-lake format, as Fluss 0.9.1-incubating's
// Java client computes them (fluss-common row/encode/KeyEncoder.java and the
// paimon/ and iceberg/ encoders beside it). Fluss 0.9.1 knows three formats
// (metadata/DataLakeFormat.java): paimon, iceberg and lance. Lance keys are
// the CompactedKeyEncoder's; Hudi does not exist in 0.9.1.
//
// Paimon (PaimonKeyEncoder, PaimonBinaryRowWriter): the key columns form a
// Paimon BinaryRow of arity n = number of key columns:
//
//	header   W = ((n+71)/64)*8 bytes: byte 0 is the RowKind (0, INSERT), then
//	         one null bit per column at bit pos+8 (LSB first)
//	fixed    n slots of 8 bytes, little-endian, zero where unused:
//	           BOOLEAN, TINYINT 1 byte; SMALLINT 2; INT, DATE, TIME 4; FLOAT
//	           4 (IEEE bits); BIGINT, DOUBLE 8; DECIMAL p<=18 the unscaled
//	           int64; TIMESTAMP/TIMESTAMP_LTZ p<=3 epoch millis;
//	           CHAR, STRING, BINARY, BYTES of <= 7 bytes inline: the bytes
//	           from slot byte 0, slot byte 7 = 0x80|len;
//	           otherwise offset<<32 | x, offset counted from the row start
//	variable the rest, in column order: long strings/bytes padded with zeros
//	         to a multiple of 8 (x = length); DECIMAL p>18 16 bytes holding
//	         the minimal big-endian two's complement unscaled value,
//	         left-aligned (x = its length); TIMESTAMP(_LTZ) p>3 the epoch
//	         millis as 8 LE bytes (x = nanos of milli)
//
// A null value of a nullable column sets its null bit and leaves the slot
// zero; a null in a NOT NULL column is an error (Java fails too).
//
// Iceberg (IcebergKeyEncoder, IcebergBinaryRowWriter) takes exactly one key
// column and encodes it as the bytes Iceberg's bucket transform hashes: INT
// and DATE as int64, TIME as micros (millis*1000), BIGINT, TIMESTAMP as
// micros (millis*1000 + nanos/1000), all 8 bytes LE; FLOAT 4 bytes LE,
// DOUBLE 8; DECIMAL the minimal big-endian two's complement unscaled value;
// CHAR/STRING the UTF-8 bytes (Java decodes and re-encodes them, so invalid
// UTF-8 comes out with U+FFFD replacements that depend on the client's JDK;
// this encoder refuses invalid UTF-8 instead of guessing); BINARY/BYTES the
// bytes. BOOLEAN, TINYINT, SMALLINT and
// TIMESTAMP_LTZ are refused, as Java refuses them. A null is an error.
//
// Which encoder a table uses for which key (KeyEncoder.ofPrimaryKeyEncoder,
// ofBucketKeyEncoder, UpsertWriterImpl, AppendWriterImpl) is NewTableKeying.

// lakeKeyFormat is the key layout of a KeyEncoder.
type lakeKeyFormat uint8

const (
	lakeKeyCompacted lakeKeyFormat = iota // CompactedKeyEncoder: no lake, or Lance
	lakeKeyPaimon
	lakeKeyIceberg
)

// parseLakeKeyFormat maps table.datalake.format to a key layout.
func parseLakeKeyFormat(lakeFormat string) (lakeKeyFormat, error) {
	switch strings.ToLower(lakeFormat) {
	case "", "lance":
		return lakeKeyCompacted, nil
	case "paimon":
		return lakeKeyPaimon, nil
	case "iceberg":
		return lakeKeyIceberg, nil
	case "hudi":
		// not a format of Fluss 0.9.1; a later Fluss may define its encoding
		return 0, fmt.Errorf("%w: %s", ErrLakeKeyEncodingNotImplemented, lakeFormat)
	default:
		return 0, fmt.Errorf("fluss: unknown data-lake format %q", lakeFormat)
	}
}

// LakeFormat returns the key layout the encoder writes: "paimon",
// "iceberg", or "" for Fluss's compacted key (no lake format, or Lance).
func (e *KeyEncoder) LakeFormat() string {
	switch e.lake {
	case lakeKeyPaimon:
		return "paimon"
	case lakeKeyIceberg:
		return "iceberg"
	}
	return ""
}

// checkLakeKeyTypes refuses key shapes the lake layout cannot encode, as
// the Java encoders' constructors do.
func (e *KeyEncoder) checkLakeKeyTypes() error {
	if e.lake != lakeKeyIceberg {
		return nil
	}
	if len(e.types) != 1 {
		return fmt.Errorf("fluss: iceberg key encoding takes exactly one key column, got %d (%s)",
			len(e.types), strings.Join(e.names, ", "))
	}
	switch e.types[0].Root {
	case TypeInt, TypeDate, TypeTime, TypeBigInt, TypeFloat, TypeDouble, TypeTimestamp,
		TypeDecimal, TypeChar, TypeString, TypeBinary, TypeBytes:
		return nil
	}
	return fmt.Errorf("fluss: key column %q: type %s is not supported by the iceberg key encoding",
		e.names[0], e.types[0])
}

// encodeLake is Encode for the Paimon and Iceberg layouts.
func (e *KeyEncoder) encodeLake(dst []byte, row Row) ([]byte, error) {
	for i, j := range e.index {
		if j >= len(row) {
			return dst, fmt.Errorf("fluss: row has %d values, key column %q is at %d", len(row), e.names[i], j)
		}
	}
	start := len(dst)
	var err error
	if e.lake == lakeKeyPaimon {
		dst, err = e.appendPaimonKey(dst, row)
	} else {
		dst, err = e.appendIcebergKey(dst, &row[e.index[0]])
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// paimonNullBytes is the header width of a Paimon BinaryRow of arity n.
func paimonNullBytes(n int) int { return (n + 63 + 8) / 64 * 8 }

func (e *KeyEncoder) appendPaimonKey(dst []byte, row Row) ([]byte, error) {
	start := len(dst)
	header := paimonNullBytes(len(e.index))
	dst = append(dst, make([]byte, header+8*len(e.index))...)
	for pos, j := range e.index {
		t, d := &e.types[pos], &row[j]
		slot := start + header + 8*pos
		if d.Null {
			if t.NotNull {
				return dst, fmt.Errorf("fluss: null value in NOT NULL key column %q", e.names[pos])
			}
			bit := pos + 8
			dst[start+bit>>3] |= 1 << (bit & 7)
			continue
		}
		switch t.Root {
		case TypeBoolean:
			if d.I != 0 {
				dst[slot] = 1
			}
		case TypeTinyInt:
			dst[slot] = byte(d.I)
		case TypeSmallInt:
			lePutU16(dst, slot, uint16(d.I))
		case TypeInt, TypeDate, TypeTime:
			lePutU32(dst, slot, uint32(int32(d.I)))
		case TypeBigInt:
			lePutU64(dst, slot, uint64(d.I))
		case TypeFloat:
			lePutU32(dst, slot, math.Float32bits(float32(d.F)))
		case TypeDouble:
			lePutU64(dst, slot, math.Float64bits(d.F))
		case TypeChar, TypeString, TypeBinary, TypeBytes:
			if len(d.B) > math.MaxInt32 {
				return dst, fmt.Errorf("fluss: key column %q: value of %d bytes is too long", e.names[pos], len(d.B))
			}
			if len(d.B) <= 7 {
				copy(dst[slot:], d.B)
				dst[slot+7] = 0x80 | byte(len(d.B))
				continue
			}
			off := len(dst) - start
			dst = append(dst, d.B...)
			dst = append(dst, make([]byte, (8-len(d.B)%8)%8)...)
			lePutU64(dst, slot, uint64(off)<<32|uint64(len(d.B)))
		case TypeDecimal:
			if t.Precision <= compactDecimalPrecision {
				lePutU64(dst, slot, uint64(d.I))
				continue
			}
			b := minimalDecimalBytes(d.B)
			if len(b) > 16 {
				return dst, fmt.Errorf("fluss: key column %q: unscaled decimal of %d bytes does not fit %s", e.names[pos], len(b), t)
			}
			off := len(dst) - start
			dst = append(dst, make([]byte, 16)...)
			copy(dst[start+off:], b)
			lePutU64(dst, slot, uint64(off)<<32|uint64(len(b)))
		case TypeTimestamp, TypeTimestampLTZ:
			if t.Precision <= compactTimestampPrecision {
				lePutU64(dst, slot, uint64(d.I))
				continue
			}
			off := len(dst) - start
			dst = leAppendU64(dst, uint64(d.I))
			// Java ORs the int nanos, sign-extended, into the slot
			lePutU64(dst, slot, uint64(off)<<32|uint64(int64(d.N)))
		default:
			return dst, fmt.Errorf("fluss: key column %q: type %s is not supported by the paimon key encoding", e.names[pos], t)
		}
	}
	return dst, nil
}

func (e *KeyEncoder) appendIcebergKey(dst []byte, d *Datum) ([]byte, error) {
	t := &e.types[0]
	if d.Null {
		return dst, fmt.Errorf("fluss: null value in key column %q", e.names[0])
	}
	switch t.Root {
	case TypeInt, TypeDate:
		return leAppendU64(dst, uint64(int64(int32(d.I)))), nil
	case TypeTime:
		return leAppendU64(dst, uint64(int64(int32(d.I))*1000)), nil
	case TypeBigInt:
		return leAppendU64(dst, uint64(d.I)), nil
	case TypeFloat:
		return leAppendU32(dst, math.Float32bits(float32(d.F))), nil
	case TypeDouble:
		return leAppendU64(dst, math.Float64bits(d.F)), nil
	case TypeTimestamp:
		return leAppendU64(dst, uint64(d.I*1000+int64(d.N)/1000)), nil
	case TypeDecimal:
		if t.Precision <= compactDecimalPrecision {
			return appendDecimalInt64(dst, d.I), nil
		}
		return append(dst, minimalDecimalBytes(d.B)...), nil
	case TypeChar, TypeString:
		if !utf8.Valid(d.B) {
			return dst, fmt.Errorf("fluss: key column %q: iceberg key encoding of invalid UTF-8 is not implemented", e.names[0])
		}
		return append(dst, d.B...), nil
	case TypeBinary, TypeBytes:
		return append(dst, d.B...), nil
	}
	return dst, fmt.Errorf("fluss: key column %q: type %s is not supported by the iceberg key encoding", e.names[0], t)
}

// TableKeying is how Fluss 0.9.1's Java client keys the rows of one table
// (UpsertWriterImpl, AppendWriterImpl, KeyEncoder.ofPrimaryKeyEncoder and
// ofBucketKeyEncoder, WriterClient's BucketingFunction.of(lakeFormat)):
//
//   - the bucket key is encoded with the lake format's encoder (Compacted for
//     no lake and Lance), and hashed with the lake format's bucketing
//     function (BucketForKeyLake);
//   - the primary key (the physical one, without partition columns) uses the
//     lake format's encoder when table.kv.format-version is absent or 1, or
//     when the bucket key is the default one (equal to the physical primary
//     key); for kv format version 2 with a different bucket key it uses the
//     CompactedKeyEncoder, so that the bucket key bytes are a prefix of the
//     primary key bytes. Such tables must be written with PUT_KV v1 or later
//     (the server refuses v0 for them with UNSUPPORTED_VERSION).
//
// It is immutable and safe for concurrent use.
type TableKeying struct {
	// PrimaryKey encodes the physical primary key; nil for log tables.
	PrimaryKey *KeyEncoder
	// BucketKey encodes the bucket key; nil if the table has none (a log
	// table without bucket keys). For a primary-key table with the default
	// bucket key it is the same encoder as PrimaryKey, so one encoding
	// serves both.
	BucketKey *KeyEncoder
	// LakeFormat is table.datalake.format in lower case ("" for none): the
	// bucketing function of Bucket.
	LakeFormat string
	// DefaultBucketKey reports whether the bucket key is the default one
	// (TableInfo.isDefaultBucketKey): the physical primary key of a
	// primary-key table, none for a log table.
	DefaultBucketKey bool
}

// NewTableKeying returns the key encoders of a table as GetTableInfo
// describes it.
func NewTableKeying(d *TableDescriptor) (*TableKeying, error) {
	if d == nil {
		return nil, errors.New("fluss: table keying needs a table descriptor")
	}
	lake := strings.ToLower(d.Properties[PropDataLakeFormat])
	if _, err := parseLakeKeyFormat(lake); err != nil {
		return nil, err
	}
	pk, bk := KeyColumns(d)
	k := &TableKeying{LakeFormat: lake}
	if d.HasPrimaryKey() {
		k.DefaultBucketKey = slices.Equal(pk, bk)
		version, err := kvFormatVersion(d)
		if err != nil {
			return nil, err
		}
		pkFormat := lake
		if version == 2 && !k.DefaultBucketKey {
			pkFormat = "" // CompactedKeyEncoder, for prefix lookups
		}
		if k.PrimaryKey, err = NewKeyEncoder(&d.Schema, pk, pkFormat); err != nil {
			return nil, fmt.Errorf("primary key encoder: %w", err)
		}
		if k.DefaultBucketKey {
			k.BucketKey = k.PrimaryKey
			return k, nil
		}
	} else {
		k.DefaultBucketKey = len(bk) == 0
	}
	if len(bk) > 0 {
		var err error
		if k.BucketKey, err = NewKeyEncoder(&d.Schema, bk, lake); err != nil {
			return nil, fmt.Errorf("bucket key encoder: %w", err)
		}
	}
	return k, nil
}

// kvFormatVersion is table.kv.format-version, 1 when absent (tables created
// before 0.9), as TableConfig.getKvFormatVersion().orElse(1).
func kvFormatVersion(d *TableDescriptor) (int, error) {
	v, ok := d.Properties[PropKvFormatVersion]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || (n != 1 && n != 2) {
		return 0, fmt.Errorf("fluss: unsupported %s %q", PropKvFormatVersion, v)
	}
	return n, nil
}

// Bucket returns the bucket of encoded bucket-key bytes (BucketKey's
// output) in a table (or partition) with numBuckets buckets, with the
// table's lake bucketing function.
func (k *TableKeying) Bucket(encodedBucketKey []byte, numBuckets int) (int32, error) {
	return BucketForKeyLake(encodedBucketKey, numBuckets, k.LakeFormat)
}
