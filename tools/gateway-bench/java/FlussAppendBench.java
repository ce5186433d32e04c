/*
 * Writes the gateway-bench JSON workload's rows through Fluss's own Java client, the writer a
 * user would otherwise run: fluss-client's append writer, one thread, the client's default
 * settings. Run in source-file mode against the self-contained fluss-client jar:
 *
 *   java -cp fluss-client-0.9.1-incubating.jar FlussAppendBench.java BOOTSTRAP DB.TABLE[,DB.TABLE...] ROWS PAYLOADS
 *
 * PAYLOADS is a file of the generator's payload strings, one per line; the other fields are
 * derived from the row number k exactly as tools/gateway-bench's generator derives them, so both
 * writers store the same rows. Rows go round-robin over the tables. It prints one line:
 * "rows=N secs=S cpu_secs=C" where secs and cpu_secs (this JVM's CPU) cover the writing and the
 * final flush only, not the JVM's start or the connection's set-up.
 */

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.GenericRow;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public class FlussAppendBench {
    private static final String[] EVENTS = {"page_view", "add_to_cart", "checkout", "search", "login"};

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            throw new IllegalArgumentException("usage: BOOTSTRAP DB.TABLE[,DB.TABLE...] ROWS PAYLOADS");
        }
        long rows = Long.parseLong(args[2]);
        List<BinaryString> payloads = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[3]), StandardCharsets.UTF_8)) {
            payloads.add(BinaryString.fromString(line));
        }
        BinaryString[] events = new BinaryString[EVENTS.length];
        for (int i = 0; i < EVENTS.length; i++) {
            events[i] = BinaryString.fromString(EVENTS[i]);
        }
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        try (Connection conn = ConnectionFactory.createConnection(conf)) {
            String[] names = args[1].split(",");
            List<Table> tables = new ArrayList<>();
            AppendWriter[] writers = new AppendWriter[names.length];
            for (int i = 0; i < names.length; i++) {
                String[] dbTable = names[i].split("\\.", 2);
                Table t = conn.getTable(TablePath.of(dbTable[0], dbTable[1]));
                tables.add(t);
                writers[i] = t.newAppend().createWriter();
            }
            long cpu0 = cpuNanos();
            long t0 = System.nanoTime();
            for (long k = 0; k < rows; k++) {
                long h = k * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
                h ^= h >>> 29;
                GenericRow row = new GenericRow(6);
                row.setField(0, k);
                row.setField(1, Long.remainderUnsigned(h, 1_000_000L));
                row.setField(2, events[(int) Long.remainderUnsigned(h >>> 20, EVENTS.length)]);
                row.setField(3, Long.remainderUnsigned(h >>> 24, 1_000_000L) / 100.0);
                row.setField(4, ((h >>> 44) & 1) == 1);
                row.setField(5, payloads.get((int) Long.remainderUnsigned(h >>> 32, payloads.size())));
                writers[(int) (k % writers.length)].append(row);
            }
            for (AppendWriter w : writers) {
                w.flush();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            double cpuSecs = (cpuNanos() - cpu0) / 1e9;
            System.out.printf("rows=%d secs=%.3f cpu_secs=%.3f%n", rows, secs, cpuSecs);
            for (Table t : tables) {
                t.close();
            }
        }
    }

    /** This JVM's CPU time (every thread, GC and JIT included). */
    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }
}
