/*
 * Test oracle for the Go lake key encoders (fluss/key_encoder_lake.go): builds a Fluss TableInfo
 * per case and keys rows exactly as the Java client's UpsertWriterImpl/AppendWriterImpl and
 * WriterClient do (KeyEncoder.ofPrimaryKeyEncoder / ofBucketKeyEncoder, BucketingFunction.of),
 * on the 0.9.1 or the 1.0.0 classes. Compiled together with FlussGolden.java, whose type and row
 * text forms it reuses, and the jar's FlussAdapter (see FlussGolden.java):
 *   java -Dflussgolden.adapter=FlussAdapter09 -cp OUT:fluss-server-0.9.1-incubating.jar FlussLakeGolden < input
 *
 * stdin: one or more cases, each
 *   "case NAME lake=FORMAT|- kv=VERSION|- pk=COLS|- bucket=COLS|- partition=COLS|-"
 *   a type line as in FlussGolden.java (columns are named f0, f1, ...)
 *   row lines as in FlussGolden.java
 * COLS is a comma-separated list of column names; "-" means none / property absent.
 * stdout per case: "case NAME", then "encoders PK BUCKET" (simple class names of the two key
 * encoders, "same" when the bucket key reuses the primary-key encoder, "none" when absent) or
 * "encoders error" when Java refuses to build them (then no row lines); then per row
 * "pk HEX|error" (primary-key tables), "bk HEX|error" (if a bucket key exists) and, when the
 * bucket key encodes, "bucket B1 B3 B16 B128" from the table's BucketingFunction ("error" where it throws).
 */

import org.apache.fluss.bucketing.BucketingFunction;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.encode.KeyEncoder;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.RowType;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class FlussLakeGolden {

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        StringBuilder out = new StringBuilder();
        List<String> caseLines = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("case ") && !caseLines.isEmpty()) {
                runCase(caseLines, out);
                caseLines.clear();
            }
            if (!line.isBlank()) {
                caseLines.add(line.trim());
            }
        }
        if (!caseLines.isEmpty()) {
            runCase(caseLines, out);
        }
        System.out.print(out);
        System.out.flush();
    }

    static List<String> cols(String v) {
        return v.equals("-") ? new ArrayList<>() : Arrays.asList(v.split(","));
    }

    static void runCase(List<String> lines, StringBuilder out) {
        String[] head = lines.get(0).split(" +");
        if (!head[0].equals("case")) {
            throw new IllegalArgumentException("expected a case line, got " + lines.get(0));
        }
        Map<String, String> opt = new HashMap<>();
        for (int i = 2; i < head.length; i++) {
            String[] kv = head[i].split("=", 2);
            opt.put(kv[0], kv[1]);
        }
        out.append("case ").append(head[1]).append('\n');

        String[] spec = lines.get(1).split(" +");
        DataType[] types = new DataType[spec.length];
        String[] names = new String[spec.length];
        for (int i = 0; i < spec.length; i++) {
            types[i] = FlussGolden.parseType(spec[i]);
            names[i] = "f" + i;
        }
        RowType rowType = RowType.of(types, names);
        List<String> pk = cols(opt.get("pk"));
        List<String> bucket = cols(opt.get("bucket"));
        List<String> partition = cols(opt.get("partition"));
        Configuration props = new Configuration();
        if (!opt.get("lake").equals("-")) {
            props.setString("table.datalake.format", opt.get("lake"));
        }
        if (!opt.get("kv").equals("-")) {
            props.setString("table.kv.format-version", opt.get("kv"));
        }

        KeyEncoder pkEnc = null;
        KeyEncoder bkEnc = null;
        BucketingFunction bucketing;
        TableInfo info;
        try {
            Schema.Builder sb = Schema.newBuilder().fromRowType(rowType);
            if (!pk.isEmpty()) {
                sb.primaryKey(pk);
            }
            info = FlussGolden.ADAPTER.tableInfo(TablePath.of("db", "t"), 1, 1, sb.build(), bucket, partition, 4,
                    props, new Configuration());
            RowType rt = info.getRowType();
            if (info.hasPrimaryKey()) {
                // UpsertWriterImpl
                pkEnc = KeyEncoder.ofPrimaryKeyEncoder(rt, info.getPhysicalPrimaryKeys(),
                        info.getTableConfig(), info.isDefaultBucketKey());
                bkEnc = info.isDefaultBucketKey()
                        ? pkEnc
                        : KeyEncoder.ofBucketKeyEncoder(rt, info.getBucketKeys(),
                                info.getTableConfig().getDataLakeFormat().orElse(null));
            } else if (!info.getBucketKeys().isEmpty()) {
                // AppendWriterImpl
                bkEnc = KeyEncoder.ofBucketKeyEncoder(rt, info.getBucketKeys(),
                        info.getTableConfig().getDataLakeFormat().orElse(null));
            }
            // WriterClient.createBucketAssigner
            bucketing = BucketingFunction.of(info.getTableConfig().getDataLakeFormat().orElse(null));
        } catch (RuntimeException e) {
            out.append("encoders error\n");
            return;
        }
        out.append("encoders ")
                .append(pkEnc == null ? "none" : pkEnc.getClass().getSimpleName())
                .append(' ')
                .append(bkEnc == null ? "none" : bkEnc == pkEnc ? "same" : bkEnc.getClass().getSimpleName())
                .append('\n');

        for (String rowLine : lines.subList(2, lines.size())) {
            GenericRow row = FlussGolden.parseRow(rowLine.split(" +"), types);
            byte[] pkBytes = null;
            if (pkEnc != null) {
                try {
                    pkBytes = pkEnc.encodeKey(row);
                    out.append("pk ").append(FlussGolden.hex(pkBytes)).append('\n');
                } catch (RuntimeException e) {
                    out.append("pk error\n");
                }
            }
            if (bkEnc == null) {
                continue;
            }
            byte[] bkBytes;
            try {
                bkBytes = bkEnc == pkEnc ? pkBytes : bkEnc.encodeKey(row);
            } catch (RuntimeException e) {
                bkBytes = null;
            }
            if (bkBytes == null) {
                out.append("bk error\n");
                continue;
            }
            out.append("bk ").append(FlussGolden.hex(bkBytes)).append('\n');
            out.append("bucket");
            for (int n : new int[] {1, 3, 16, 128}) {
                String b;
                try {
                    b = Integer.toString(bucketing.bucketing(bkBytes, n));
                } catch (RuntimeException e) {
                    b = "error"; // e.g. an empty key
                }
                out.append(' ').append(b);
            }
            out.append('\n');
        }
    }
}
