/*
 * Test oracle for the Go record encoders: runs Fluss's own Java classes
 * (from the fluss-server 0.9.1-incubating jar or the self-contained fluss-client
 * 1.0.0 jar, both of which bundle fluss-common) on rows given in a canonical text
 * form, and prints what Java encodes or decodes. Compiled with FlussAdapter.java and
 * the jar's implementation of it (FlussAdapter09.java or FlussAdapter10.java):
 *   javac -cp JAR -d OUT FlussGolden.java FlussLakeGolden.java FlussAdapter.java FlussAdapter10.java
 *   java -Dflussgolden.adapter=FlussAdapter10 -cp OUT:JAR FlussGolden MODE ...
 *
 * stdin, line 1: column types, space separated, e.g. "INTEGER! STRING DECIMAL(38,10) TIMESTAMP(6)"
 *                ("!" = NOT NULL), nested ones as "ARRAY<T>", "MAP<K,V>", "ROW<name:T,name:T>"
 *                (e.g. "ARRAY<ROW<a:INTEGER!,b:STRING>>!"). Following lines: one row each, fields
 *                space separated:
 *                "null" | integer | float/double as IEEE bits (unsigned decimal) |
 *                decimal: unscaled long (p<=18) or big-endian two's complement hex (p>18) |
 *                strings and bytes as hex ("-" for empty) | timestamps "millis:nanoOfMilli" |
 *                arrays "[v,v]" | maps "{k=v,k=v}" (entry order kept) | rows "(v,v)".
 * MODE encode         prints per row "compacted HEX", "indexed HEX", and if no field is null
 *                     "key HEX" and "bucket HASH MURMUR B1 B3 B4 B16 B128"; then "kv_compacted HEX",
 *                     "kv_indexed HEX" (row i: key {i,1}, every third record a delete) and
 *                     "log_indexed HEX" (append-only), all with schema id 1.
 *                     (Schemas with ARRAY, MAP or ROW columns print no key and bucket lines.)
 * MODE encode-arrow   prints "log_arrow HEX": one ARROW log batch of the rows (append-only,
 *                     schema id 1, no compression) from ArrowWriterPool + MemoryLogRecordsArrowBuilder.
 * MODE encode-arrow-stats
 *                     the same with column statistics for every supported column (what a 1.0 client
 *                     writes for a table with table.statistics.columns = '*'), or "log_arrow unsupported"
 *                     on a version without column statistics.
 * MODE read FORMAT FILE SCHEMA_ID
 *                     decodes the log batches in FILE (ARROW, INDEXED or COMPACTED) and prints
 *                     one line per record: change type and the canonical fields.
 * MODE decode FORMAT  reads rows in FORMAT (COMPACTED or INDEXED) as hex, one a line after the
 *                     schema line, and prints each one's canonical fields (CompactedRow, IndexedRow).
 * MODE version        (no stdin) prints "fluss VERSION adapter LINE": the jar's Implementation-Version
 *                     and the adapter's Fluss line, so that a harness can check what it runs on.
 */

import org.apache.fluss.bucketing.BucketingFunction;
import org.apache.fluss.compression.ArrowCompressionInfo;
import org.apache.fluss.memory.MemorySegment;
import org.apache.fluss.record.MemoryLogRecordsArrowBuilder;
import org.apache.fluss.row.DataGetters;
import org.apache.fluss.row.GenericArray;
import org.apache.fluss.row.GenericMap;
import org.apache.fluss.row.InternalArray;
import org.apache.fluss.row.InternalMap;
import org.apache.fluss.row.arrow.ArrowWriter;
import org.apache.fluss.row.arrow.ArrowWriterPool;
import org.apache.fluss.row.compacted.CompactedRow;
import org.apache.fluss.shaded.arrow.org.apache.arrow.memory.BufferAllocator;
import org.apache.fluss.shaded.arrow.org.apache.arrow.memory.RootAllocator;
import org.apache.fluss.types.ArrayType;
import org.apache.fluss.types.DataField;
import org.apache.fluss.types.MapType;
import org.apache.fluss.memory.UnmanagedPagedOutputView;
import org.apache.fluss.metadata.KvFormat;
import org.apache.fluss.metadata.LogFormat;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.SchemaGetter;
import org.apache.fluss.metadata.SchemaInfo;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.record.ChangeType;
import org.apache.fluss.record.KvRecordBatchBuilder;
import org.apache.fluss.record.LogRecord;
import org.apache.fluss.record.LogRecordBatch;
import org.apache.fluss.record.LogRecordReadContext;
import org.apache.fluss.record.MemoryLogRecords;
import org.apache.fluss.record.MemoryLogRecordsIndexedBuilder;
import org.apache.fluss.record.bytesview.BytesView;
import org.apache.fluss.row.BinaryRow;
import org.apache.fluss.row.BinarySegmentUtils;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.Decimal;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.InternalRow;
import org.apache.fluss.row.TimestampLtz;
import org.apache.fluss.row.TimestampNtz;
import org.apache.fluss.row.encode.CompactedKeyEncoder;
import org.apache.fluss.row.encode.RowEncoder;
import org.apache.fluss.row.indexed.IndexedRow;
import org.apache.fluss.types.BinaryType;
import org.apache.fluss.types.CharType;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.DataTypes;
import org.apache.fluss.types.DecimalType;
import org.apache.fluss.types.LocalZonedTimestampType;
import org.apache.fluss.types.RowType;
import org.apache.fluss.types.TimeType;
import org.apache.fluss.types.TimestampType;
import org.apache.fluss.utils.CloseableIterator;
import org.apache.fluss.utils.MathUtils;
import org.apache.fluss.utils.MurmurHashUtils;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

public class FlussGolden {

    static final FlussAdapter ADAPTER = FlussAdapter.load();

    public static void main(String[] args) throws Exception {
        if (args[0].equals("version")) {
            System.out.println("fluss " + TableInfo.class.getPackage().getImplementationVersion()
                    + " adapter " + ADAPTER.line());
            return;
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String[] spec = in.readLine().trim().split(" +");
        DataType[] types = new DataType[spec.length];
        String[] names = new String[spec.length];
        for (int i = 0; i < spec.length; i++) {
            types[i] = parseType(spec[i]);
            names[i] = "f" + i;
        }
        RowType rowType = RowType.of(types, names);
        StringBuilder out = new StringBuilder();
        if (args[0].equals("encode") || args[0].equals("encode-arrow") || args[0].equals("encode-arrow-stats")) {
            List<GenericRow> rows = new ArrayList<>();
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isBlank()) {
                    rows.add(parseRow(line.trim().split(" +"), types));
                }
            }
            if (args[0].equals("encode")) {
                encode(rowType, types, rows, out);
            } else {
                encodeArrow(rowType, rows, args[0].equals("encode-arrow-stats"), out);
            }
        } else if (args[0].equals("decode")) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                byte[] b = unhex(line.trim());
                BinaryRow row = args[1].equals("INDEXED") ? new IndexedRow(types) : new CompactedRow(types);
                row.pointTo(MemorySegment.wrap(b), 0, b.length);
                for (int i = 0; i < types.length; i++) {
                    out.append(i == 0 ? "" : " ").append(canonical(row, i, types[i]));
                }
                out.append('\n');
            }
        } else if (args[0].equals("read")) {
            byte[] data = Files.readAllBytes(Paths.get(args[2]));
            read(rowType, types, LogFormat.valueOf(args[1]), Integer.parseInt(args[3]), data, out);
        } else {
            throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        System.out.print(out);
        System.out.flush();
    }

    /** A position in a type spec or a nested value. */
    static final class Cursor {
        final String s;
        int i;

        Cursor(String s) {
            this.s = s;
        }

        boolean at(char c) {
            return i < s.length() && s.charAt(i) == c;
        }

        void expect(char c) {
            if (!at(c)) {
                throw new IllegalArgumentException("want '" + c + "' at " + i + " of " + s);
            }
            i++;
        }

        /** Reads up to (not including) the next character of stops. */
        String token(String stops) {
            int start = i;
            while (i < s.length() && stops.indexOf(s.charAt(i)) < 0) {
                i++;
            }
            return s.substring(start, i);
        }

        void end() {
            if (i != s.length()) {
                throw new IllegalArgumentException("trailing text at " + i + " of " + s);
            }
        }
    }

    static DataType parseType(String s) {
        Cursor c = new Cursor(s);
        DataType t = parseType(c);
        c.end();
        return t;
    }

    static DataType parseType(Cursor c) {
        String name = c.token("(<!,>:");
        int[] p = new int[0];
        if (c.at('(')) {
            c.expect('(');
            String[] parts = c.token(")").split(",");
            c.expect(')');
            p = new int[parts.length];
            for (int i = 0; i < parts.length; i++) {
                p[i] = Integer.parseInt(parts[i].trim());
            }
        }
        DataType t;
        switch (name) {
            case "BOOLEAN": t = DataTypes.BOOLEAN(); break;
            case "TINYINT": t = DataTypes.TINYINT(); break;
            case "SMALLINT": t = DataTypes.SMALLINT(); break;
            case "INTEGER": t = DataTypes.INT(); break;
            case "BIGINT": t = DataTypes.BIGINT(); break;
            case "FLOAT": t = DataTypes.FLOAT(); break;
            case "DOUBLE": t = DataTypes.DOUBLE(); break;
            case "DECIMAL": t = DataTypes.DECIMAL(p[0], p[1]); break;
            case "CHAR": t = DataTypes.CHAR(p[0]); break;
            case "STRING": t = DataTypes.STRING(); break;
            case "BINARY": t = DataTypes.BINARY(p[0]); break;
            case "BYTES": t = DataTypes.BYTES(); break;
            case "DATE": t = DataTypes.DATE(); break;
            case "TIME": t = DataTypes.TIME(p[0]); break;
            case "TIMESTAMP": t = DataTypes.TIMESTAMP(p[0]); break;
            case "TIMESTAMP_LTZ": t = DataTypes.TIMESTAMP_LTZ(p[0]); break;
            case "ARRAY": {
                c.expect('<');
                DataType e = parseType(c);
                c.expect('>');
                t = DataTypes.ARRAY(e);
                break;
            }
            case "MAP": {
                c.expect('<');
                DataType k = parseType(c);
                c.expect(',');
                DataType v = parseType(c);
                c.expect('>');
                t = DataTypes.MAP(k, v);
                break;
            }
            case "ROW": {
                c.expect('<');
                List<DataField> fields = new ArrayList<>();
                while (!c.at('>')) {
                    if (!fields.isEmpty()) {
                        c.expect(',');
                    }
                    String fname = c.token(":");
                    c.expect(':');
                    fields.add(DataTypes.FIELD(fname, parseType(c)));
                }
                c.expect('>');
                t = DataTypes.ROW(fields.toArray(new DataField[0]));
                break;
            }
            default: throw new IllegalArgumentException("unknown type " + name);
        }
        if (c.at('!')) {
            c.expect('!');
            return t.copy(false);
        }
        return t;
    }

    static GenericRow parseRow(String[] f, DataType[] types) {
        if (f.length != types.length) {
            throw new IllegalArgumentException("row has " + f.length + " fields");
        }
        GenericRow row = new GenericRow(types.length);
        for (int i = 0; i < types.length; i++) {
            Cursor c = new Cursor(f[i]);
            row.setField(i, parseAny(c, types[i]));
            c.end();
        }
        return row;
    }

    static byte[] unhex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    static String hex(byte[] b) {
        if (b.length == 0) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    /** Parses a scalar or nested value at c (see the header for the syntax). */
    static Object parseAny(Cursor c, DataType t) {
        if (c.s.startsWith("null", c.i)) {
            c.i += 4;
            return null;
        }
        switch (t.getTypeRoot()) {
            case ARRAY: {
                DataType et = ((ArrayType) t).getElementType();
                List<Object> elems = new ArrayList<>();
                c.expect('[');
                while (!c.at(']')) {
                    if (!elems.isEmpty()) {
                        c.expect(',');
                    }
                    elems.add(parseAny(c, et));
                }
                c.expect(']');
                return new GenericArray(elems.toArray());
            }
            case MAP: {
                MapType mt = (MapType) t;
                Map<Object, Object> m = new LinkedHashMap<>();
                c.expect('{');
                while (!c.at('}')) {
                    if (!m.isEmpty()) {
                        c.expect(',');
                    }
                    Object k = parseAny(c, mt.getKeyType());
                    c.expect('=');
                    m.put(k, parseAny(c, mt.getValueType()));
                }
                c.expect('}');
                return new GenericMap(m);
            }
            case ROW: {
                RowType rt = (RowType) t;
                GenericRow r = new GenericRow(rt.getFieldCount());
                c.expect('(');
                for (int i = 0; i < rt.getFieldCount(); i++) {
                    if (i > 0) {
                        c.expect(',');
                    }
                    r.setField(i, parseAny(c, rt.getTypeAt(i)));
                }
                c.expect(')');
                return r;
            }
            default:
                return parseValue(c.token(",]})="), t);
        }
    }

    static Object parseValue(String v, DataType t) {
        switch (t.getTypeRoot()) {
            case BOOLEAN: return Long.parseLong(v) != 0;
            case TINYINT: return (byte) Long.parseLong(v);
            case SMALLINT: return (short) Long.parseLong(v);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE: return (int) Long.parseLong(v);
            case BIGINT: return Long.parseLong(v);
            case FLOAT: return Float.intBitsToFloat((int) Long.parseLong(v));
            case DOUBLE: return Double.longBitsToDouble(Long.parseUnsignedLong(v));
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                if (d.getPrecision() <= 18) {
                    return Decimal.fromUnscaledLong(Long.parseLong(v), d.getPrecision(), d.getScale());
                }
                return Decimal.fromUnscaledBytes(unhex(v), d.getPrecision(), d.getScale());
            }
            case CHAR:
            case STRING: return BinaryString.fromBytes(unhex(v));
            case BINARY:
            case BYTES: return unhex(v);
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                String[] p = v.split(":");
                return TimestampNtz.fromMillis(Long.parseLong(p[0]), Integer.parseInt(p[1]));
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                String[] p = v.split(":");
                return TimestampLtz.fromEpochMillis(Long.parseLong(p[0]), Integer.parseInt(p[1]));
            }
            default: throw new IllegalArgumentException("unsupported " + t);
        }
    }

    static String canonical(DataGetters row, int i, DataType t) {
        if (row.isNullAt(i)) {
            return "null";
        }
        switch (t.getTypeRoot()) {
            case ARRAY: {
                DataType et = ((ArrayType) t).getElementType();
                InternalArray a = row.getArray(i);
                StringBuilder sb = new StringBuilder("[");
                for (int j = 0; j < a.size(); j++) {
                    sb.append(j == 0 ? "" : ",").append(canonical(a, j, et));
                }
                return sb.append(']').toString();
            }
            case MAP: {
                MapType mt = (MapType) t;
                InternalMap m = row.getMap(i);
                InternalArray ks = m.keyArray();
                InternalArray vs = m.valueArray();
                StringBuilder sb = new StringBuilder("{");
                for (int j = 0; j < m.size(); j++) {
                    sb.append(j == 0 ? "" : ",").append(canonical(ks, j, mt.getKeyType()))
                            .append('=').append(canonical(vs, j, mt.getValueType()));
                }
                return sb.append('}').toString();
            }
            case ROW: {
                RowType rt = (RowType) t;
                InternalRow r = row.getRow(i, rt.getFieldCount());
                StringBuilder sb = new StringBuilder("(");
                for (int j = 0; j < rt.getFieldCount(); j++) {
                    sb.append(j == 0 ? "" : ",").append(canonical(r, j, rt.getTypeAt(j)));
                }
                return sb.append(')').toString();
            }
            case BOOLEAN: return row.getBoolean(i) ? "1" : "0";
            case TINYINT: return Byte.toString(row.getByte(i));
            case SMALLINT: return Short.toString(row.getShort(i));
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE: return Integer.toString(row.getInt(i));
            case BIGINT: return Long.toString(row.getLong(i));
            case FLOAT: return Integer.toUnsignedString(Float.floatToRawIntBits(row.getFloat(i)));
            case DOUBLE: return Long.toUnsignedString(Double.doubleToRawLongBits(row.getDouble(i)));
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                BigInteger u = row.getDecimal(i, d.getPrecision(), d.getScale()).toBigDecimal().unscaledValue();
                return d.getPrecision() <= 18 ? u.toString() : hex(u.toByteArray());
            }
            case CHAR: {
                // ColumnarArray.getChar (Arrow arrays) reads CHAR(n) as exactly n bytes and fails
                // on shorter values; array elements are read with getString, as BinaryArray does.
                BinaryString v = row instanceof InternalArray
                        ? row.getString(i) : row.getChar(i, ((CharType) t).getLength());
                return hex(v.toBytes());
            }
            case STRING: return hex(row.getString(i).toBytes());
            case BINARY: return hex(row.getBinary(i, ((BinaryType) t).getLength()));
            case BYTES: return hex(row.getBytes(i));
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                TimestampNtz ts = row.getTimestampNtz(i, ((TimestampType) t).getPrecision());
                return ts.getMillisecond() + ":" + ts.getNanoOfMillisecond();
            }
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                TimestampLtz ts = row.getTimestampLtz(i, ((LocalZonedTimestampType) t).getPrecision());
                return ts.getEpochMillisecond() + ":" + ts.getNanoOfMillisecond();
            }
            default: throw new IllegalArgumentException("unsupported " + t);
        }
    }

    static byte[] bytesOf(BinaryRow r) {
        return BinarySegmentUtils.copyToBytes(r.getSegments(), r.getOffset(), r.getSizeInBytes());
    }

    static byte[] bytesOf(BytesView v) {
        var buf = v.getByteBuf();
        byte[] out = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), out);
        return out;
    }

    static BinaryRow encodeRow(KvFormat format, RowType rowType, GenericRow row) {
        RowEncoder enc = RowEncoder.create(format, rowType);
        enc.startNewRow();
        for (int i = 0; i < row.getFieldCount(); i++) {
            enc.encodeField(i, row.getField(i));
        }
        return enc.finishRow();
    }

    static boolean scalar(DataType[] types) {
        for (DataType t : types) {
            switch (t.getTypeRoot()) {
                case ARRAY:
                case MAP:
                case ROW:
                    return false;
                default:
            }
        }
        return true;
    }

    static void encodeArrow(RowType rowType, List<GenericRow> rows, boolean statistics, StringBuilder out)
            throws Exception {
        if (statistics && !ADAPTER.columnStatistics()) {
            out.append("log_arrow unsupported\n");
            return;
        }
        try (BufferAllocator allocator = new RootAllocator(Integer.MAX_VALUE);
                ArrowWriterPool pool = new ArrowWriterPool(allocator)) {
            ArrowWriter writer = pool.getOrCreateWriter(
                    1L, 1, Integer.MAX_VALUE, rowType, ArrowCompressionInfo.NO_COMPRESSION);
            UnmanagedPagedOutputView view = new UnmanagedPagedOutputView(256);
            MemoryLogRecordsArrowBuilder builder = statistics
                    ? ADAPTER.statisticsArrowBuilder(rowType, 1, writer, view)
                    : ADAPTER.appendOnlyArrowBuilder(1, writer, view);
            for (GenericRow row : rows) {
                builder.append(ChangeType.APPEND_ONLY, row);
            }
            builder.close();
            out.append("log_arrow ").append(hex(bytesOf(builder.build()))).append('\n');
        }
    }

    static void encode(RowType rowType, DataType[] types, List<GenericRow> rows, StringBuilder out)
            throws Exception {
        boolean keyed = scalar(types);
        CompactedKeyEncoder keyEncoder = keyed ? new CompactedKeyEncoder(rowType) : null;
        BucketingFunction fluss = BucketingFunction.of(null);
        KvRecordBatchBuilder kvc = KvRecordBatchBuilder.builder(
                1, Integer.MAX_VALUE, new UnmanagedPagedOutputView(256), KvFormat.COMPACTED);
        KvRecordBatchBuilder kvi = KvRecordBatchBuilder.builder(
                1, Integer.MAX_VALUE, new UnmanagedPagedOutputView(256), KvFormat.INDEXED);
        MemoryLogRecordsIndexedBuilder log = MemoryLogRecordsIndexedBuilder.builder(
                1, Integer.MAX_VALUE, new UnmanagedPagedOutputView(256), true);
        for (int r = 0; r < rows.size(); r++) {
            GenericRow row = rows.get(r);
            BinaryRow compacted = encodeRow(KvFormat.COMPACTED, rowType, row);
            BinaryRow indexed = encodeRow(KvFormat.INDEXED, rowType, row);
            out.append("compacted ").append(hex(bytesOf(compacted))).append('\n');
            out.append("indexed ").append(hex(bytesOf(indexed))).append('\n');
            boolean anyNull = false;
            for (int i = 0; i < types.length; i++) {
                anyNull |= row.isNullAt(i);
            }
            if (keyed && !anyNull) {
                byte[] key = keyEncoder.encodeKey(row);
                int h = MurmurHashUtils.hashBytes(key);
                out.append("key ").append(hex(key)).append('\n');
                out.append("bucket ").append(h).append(' ').append(MathUtils.murmurHash(h));
                for (int n : new int[] {1, 3, 4, 16, 128}) {
                    out.append(' ').append(fluss.bucketing(key, n));
                }
                out.append('\n');
            }
            byte[] kvKey = new byte[] {(byte) r, 1};
            if (r % 3 == 2) {
                kvc.append(kvKey, null);
                kvi.append(kvKey, null);
            } else {
                kvc.append(kvKey, compacted);
                kvi.append(kvKey, indexed);
            }
            log.append(ChangeType.APPEND_ONLY, (IndexedRow) indexed);
        }
        out.append("kv_compacted ").append(hex(bytesOf(kvc.build()))).append('\n');
        out.append("kv_indexed ").append(hex(bytesOf(kvi.build()))).append('\n');
        out.append("log_indexed ").append(hex(bytesOf(log.build()))).append('\n');
    }

    static void read(RowType rowType, DataType[] types, LogFormat format, int schemaId, byte[] data,
            StringBuilder out) throws Exception {
        Schema schema = Schema.newBuilder().fromRowType(rowType).build();
        SchemaGetter getter = new SchemaGetter() {
            public Schema getSchema(int id) { return schema; }
            public CompletableFuture<SchemaInfo> getSchemaInfoAsync(int id) {
                return CompletableFuture.completedFuture(new SchemaInfo(schema, id));
            }
            public SchemaInfo getLatestSchemaInfo() { return new SchemaInfo(schema, schemaId); }
            public void release() {}
        };
        LogRecordReadContext ctx;
        switch (format) {
            case ARROW: ctx = LogRecordReadContext.createArrowReadContext(rowType, schemaId, getter); break;
            case INDEXED: ctx = LogRecordReadContext.createIndexedReadContext(rowType, schemaId, getter); break;
            default: ctx = ADAPTER.compactedReadContext(rowType, schemaId, getter); break;
        }
        try {
            MemoryLogRecords records = MemoryLogRecords.pointToBytes(data);
            for (LogRecordBatch batch : records.batches()) {
                batch.ensureValid();
                try (CloseableIterator<LogRecord> it = batch.records(ctx)) {
                    while (it.hasNext()) {
                        LogRecord rec = it.next();
                        out.append(rec.logOffset()).append(' ').append(rec.getChangeType().shortString());
                        InternalRow row = rec.getRow();
                        for (int i = 0; i < types.length; i++) {
                            out.append(' ').append(canonical(row, i, types[i]));
                        }
                        out.append('\n');
                    }
                }
            }
        } finally {
            ctx.close();
        }
    }
}
