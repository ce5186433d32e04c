/*
 * Flink's exactly-once Kafka sink against the gateway, with one failure: a bounded job (Flink 1.20,
 * flink-connector-kafka 3.4.0-1.20, a local MiniCluster in this JVM) writes {"producer": "flink",
 * "seq": n} for n in [0, N) through KafkaSink with DeliveryGuarantee.EXACTLY_ONCE, checkpointing
 * every second. At the first record after the first completed checkpoint, the map function fails
 * once (a task failure,
 * restarted from that checkpoint: the sink aborts its lingering transactions by probing
 * InitProducerId and commits the restored ones). Compiled and run by internal/gatewaytest (FlinkTxnJob):
 *
 *   java --add-opens ... -cp CLASSES:LIB/* FlinkTxnJob BOOTSTRAP TOPIC TXN_PREFIX N PARALLELISM
 *
 * It prints "FAILED-ONCE true" when the injected failure happened, then "DONE" once the job has
 * finished (its final checkpoint committed the last transactions).
 */

import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.streaming.api.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

public class FlinkTxnJob {
    // The MiniCluster runs in this JVM, and a restarted task gets new function
    // objects: the failure is injected once per process.
    static final AtomicBoolean FAILED = new AtomicBoolean();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], prefix = args[2];
        long n = Long.parseLong(args[3]);
        int parallelism = Integer.parseInt(args[4]);

        Configuration conf = new Configuration();
        conf.setString("restart-strategy.type", "fixed-delay");
        conf.setString("restart-strategy.fixed-delay.attempts", "3");
        conf.setString("restart-strategy.fixed-delay.delay", "1 s");
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
                .build();
        env.fromSequence(0, n - 1).map(new FailOnce()).sinkTo(sink);
        env.execute("gateway-flink-exactly-once");
        System.out.println("FAILED-ONCE " + FAILED.get());
        System.out.println("DONE");
    }

    /**
     * Turns ids into JSON rows, slowly enough for several checkpoints (about 1 ms per 2 records), and fails
     * once, at its first record after a completed checkpoint: whenever that is, on a slow machine too.
     */
    static class FailOnce extends RichMapFunction<Long, String> implements CheckpointListener {
        private volatile boolean checkpointed;

        @Override
        public String map(Long id) throws Exception {
            if (id % 2 == 0) {
                Thread.sleep(1);
            }
            if (checkpointed && FAILED.compareAndSet(false, true)) {
                throw new RuntimeException("injected failure after a completed checkpoint, at id " + id);
            }
            return "{\"producer\": \"flink\", \"seq\": " + id + "}";
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            checkpointed = true;
        }
    }
}
