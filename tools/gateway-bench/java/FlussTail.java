/*
 * Tails a Fluss log table of the gateway-bench JSON workload with Fluss's own Java client and
 * records when each row became readable: the far end of "time from produce to a readable row".
 * Run in source-file mode against the self-contained fluss-client jar:
 *
 *   java -cp fluss-client-0.9.1-incubating.jar FlussTail.java BOOTSTRAP DB.TABLE
 *
 * It subscribes to every bucket from the beginning, prints "READY", then reads commands on stdin,
 * one per line: "RUN FIRST N FILE" waits until it has read every id in [FIRST, FIRST+N) (column 0),
 * writes FILE (N little-endian longs: the wall-clock microsecond at which id FIRST+i was polled) and
 * prints "DONE rows=N duplicates=D other=O" (D: ids of the range read more than once; O: rows
 * outside it, read while waiting). Rows outside the range are earlier runs' and are skipped.
 */

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.scanner.log.ScanRecords;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.TablePath;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;

public class FlussTail {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: BOOTSTRAP DB.TABLE");
        }
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", args[0]);
        // A fetch waits for its bytes up to this long, and the tablet server answers it at the end of
        // the wait rather than when rows arrive (the default 500 ms put ~300 ms into every reading):
        // a row is read at most this much after it became readable.
        conf.setString("client.scanner.log.fetch.wait-max-time", "20ms");
        String[] dbTable = args[1].split("\\.", 2);
        try (Connection conn = ConnectionFactory.createConnection(conf);
                Table table = conn.getTable(TablePath.of(dbTable[0], dbTable[1]));
                LogScanner scanner = table.newScan().createLogScanner()) {
            int buckets = table.getTableInfo().getNumBuckets();
            for (int b = 0; b < buckets; b++) {
                scanner.subscribeFromBeginning(b);
            }
            System.out.println("READY");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.trim().split("\\s+");
                if (f.length != 4 || !f[0].equals("RUN")) {
                    throw new IllegalArgumentException("want RUN FIRST N FILE, got: " + line);
                }
                long first = Long.parseLong(f[1]);
                int n = Integer.parseInt(f[2]);
                long[] seen = new long[n];
                int rows = 0, duplicates = 0, other = 0;
                while (rows < n) {
                    ScanRecords records = scanner.poll(Duration.ofMillis(20));
                    long now = nowMicros();
                    for (ScanRecord r : records) {
                        long i = r.getRow().getLong(0) - first;
                        if (i < 0 || i >= n) {
                            other++;
                        } else if (seen[(int) i] != 0) {
                            duplicates++;
                        } else {
                            seen[(int) i] = now;
                            rows++;
                        }
                    }
                }
                ByteBuffer out = ByteBuffer.allocate(n * 8).order(ByteOrder.LITTLE_ENDIAN);
                out.asLongBuffer().put(seen);
                try (FileChannel ch = FileChannel.open(Path.of(f[3]), StandardOpenOption.CREATE,
                        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
                    while (out.hasRemaining()) {
                        ch.write(out);
                    }
                }
                System.out.printf("DONE rows=%d duplicates=%d other=%d%n", rows, duplicates, other);
                System.out.flush();
            }
        }
    }

    private static long nowMicros() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }
}
