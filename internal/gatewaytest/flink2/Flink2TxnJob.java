/*
 * Flink 2.0's exactly-once Kafka sink with TransactionNamingStrategy.POOLING against the gateway, with
 * one crash and a recovery from the last completed checkpoint (flink-connector-kafka 4.0.1-2.0, a local
 * MiniCluster in this JVM). A bounded job writes {"producer": "flink2", "seq": n} for n in [0, N)
 * through KafkaSink with DeliveryGuarantee.EXACTLY_ONCE, checkpointing every second into
 * CHECKPOINT_DIR (the last 3 completed checkpoints kept). Compiled and run by internal/gatewaytest
 * (Flink2TxnJob):
 *
 *   java --add-opens ... -cp CLASSES:LIB/* Flink2TxnJob BOOTSTRAP TOPIC TXN_PREFIX N PARALLELISM CHECKPOINT_DIR [RESTORE]
 *
 * Without RESTORE (the first run) the process dies at once (Runtime.halt(3), as a lost TaskManager)
 * 200 records after the first completed checkpoint and half a second of sending: the sink's open
 * transactions are left ongoing in the gateway, with records. It prints "HALT-AFTER-CHECKPOINT
 * <path>" first: the directory of the last checkpoint completed by then (CHECKPOINT_DIR/<job>/chk-<id>,
 * the newest holding its _metadata), which is what Flink itself would restore: an older one would
 * replay rows that a later checkpoint's transactions already committed. (A
 * task failure inside one JVM would not do: Flink 2.0's writer aborts its open transaction when it is
 * closed, so nothing would linger.)
 *
 * With RESTORE, a checkpoint directory (CHECKPOINT_DIR/<job>/chk-<id>), the job resumes from it: each
 * sink writer's POOLING naming strategy recovers with the LISTING abort strategy (Admin
 * describeTopics, describeProducers, listTransactions(producer ids, ONGOING)), aborts the listed
 * transactions of its prefix that it owns by InitProducerId on their ids, commits the restored
 * precommitted ones, and the job finishes. It prints "DONE" then.
 */

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.TransactionNamingStrategy;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

public class Flink2TxnJob {
    // Both subtasks' functions run in this JVM: the crash is announced once.
    static final AtomicBoolean HALTING = new AtomicBoolean();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], prefix = args[2];
        long n = Long.parseLong(args[3]);
        int parallelism = Integer.parseInt(args[4]);
        String checkpoints = args[5];
        String restore = args.length > 6 ? args[6] : null;

        Configuration conf = new Configuration();
        // Any failure of the recovered run fails the test with its exception.
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints);
        conf.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
        if (restore != null) {
            conf.set(StateRecoveryOptions.SAVEPOINT_PATH, restore);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        env.enableCheckpointing(1000, CheckpointingMode.EXACTLY_ONCE);

        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic(topic)
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(prefix)
                .setTransactionNamingStrategy(TransactionNamingStrategy.POOLING)
                .build();
        env.fromSequence(0, n - 1).map(new HaltOnce(restore == null ? checkpoints : null)).sinkTo(sink);
        env.execute("gateway-flink2-exactly-once-pooling");
        System.out.println("DONE");
    }

    /**
     * Turns ids into JSON rows, slowly enough for several checkpoints (about 1 ms per 2 records), and,
     * given the checkpoint directory (the first run), kills the process 200 records after the first
     * completed checkpoint it hears of (whenever that is, on a slow machine too), after half a second
     * for the producer to send them. Checkpoints may complete meanwhile (the other subtask runs on,
     * and notifications can lag): the one announced is looked up on disk just before the halt.
     */
    static class HaltOnce extends RichMapFunction<Long, String> implements CheckpointListener {
        private final String checkpoints;
        private volatile boolean completed;
        private int after;

        HaltOnce(String checkpoints) {
            this.checkpoints = checkpoints;
        }

        @Override
        public String map(Long id) throws Exception {
            if (id % 2 == 0) {
                Thread.sleep(1);
            }
            if (checkpoints != null && completed && ++after == 200 && HALTING.compareAndSet(false, true)) {
                Thread.sleep(500);
                Path job = Paths.get(URI.create(checkpoints)).resolve(getRuntimeContext().getJobInfo().getJobId().toString());
                System.out.println("HALT-AFTER-CHECKPOINT " + checkpoints + "/"
                        + getRuntimeContext().getJobInfo().getJobId() + "/chk-" + lastCompleted(job));
                System.out.flush();
                Runtime.getRuntime().halt(3);
            }
            return "{\"producer\": \"flink2\", \"seq\": " + id + "}";
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            completed = true;
        }

        /** The highest checkpoint id under the job's directory whose _metadata is written. */
        static long lastCompleted(Path job) throws IOException {
            try (Stream<Path> dirs = Files.list(job)) {
                return dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                        .filter(d -> Files.exists(d.resolve("_metadata")))
                        .mapToLong(d -> Long.parseLong(d.getFileName().toString().substring(4)))
                        .max()
                        .orElseThrow(() -> new IOException("no completed checkpoint under " + job));
            }
        }
    }
}
