/*
 * The pipeline a user would otherwise run to get Kafka producers' records into Fluss: a Flink job
 * (Flink 1.20, flink-connector-kafka, Fluss's Flink connector) reading a Kafka topic of the
 * gateway-bench JSON workload and inserting every record into a Fluss table, written as such a
 * user would write it, in Flink SQL. It runs in one local Flink (a MiniCluster in this JVM), in
 * source-file mode against the jars tools/gateway-bench resolves from Maven Central:
 *
 *   java -cp 'LIB/*' KafkaToFlussJob.java KAFKA_BOOTSTRAP TOPIC FLUSS_BOOTSTRAP DB TABLE PARALLELISM CHECKPOINT_MS
 *
 * It prints "RUNNING" once the job runs, then runs until it is killed. Checkpoints (at least once)
 * commit the Kafka offsets and make the Fluss sink flush; between them the Fluss client's writer
 * sends its batches as they fill or time out.
 */

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

public class KafkaToFlussJob {
    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            throw new IllegalArgumentException(
                    "usage: KAFKA_BOOTSTRAP TOPIC FLUSS_BOOTSTRAP DB TABLE PARALLELISM CHECKPOINT_MS");
        }
        String kafka = args[0], topic = args[1], fluss = args[2], db = args[3], table = args[4];
        int parallelism = Integer.parseInt(args[5]);
        long checkpointMs = Long.parseLong(args[6]);

        Configuration conf = new Configuration();
        conf.setString("parallelism.default", Integer.toString(parallelism));
        conf.setString("execution.checkpointing.interval", checkpointMs + " ms");
        conf.setString("execution.checkpointing.mode", "AT_LEAST_ONCE");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);

        tables.executeSql(
                "CREATE TABLE src (id BIGINT, user_id BIGINT, event STRING, amount DOUBLE, ok BOOLEAN, payload STRING) WITH ("
                        + "'connector' = 'kafka', 'topic' = '" + topic + "', "
                        + "'properties.bootstrap.servers' = '" + kafka + "', "
                        + "'properties.group.id' = 'gwbench-" + topic + "', "
                        + "'scan.startup.mode' = 'earliest-offset', 'format' = 'json')");
        tables.executeSql("CREATE CATALOG fluss WITH ('type' = 'fluss', 'bootstrap.servers' = '" + fluss + "')");
        TableResult result = tables.executeSql(
                "INSERT INTO fluss.`" + db + "`.`" + table + "` SELECT id, user_id, event, amount, ok, payload FROM src");

        JobClient job = result.getJobClient().orElseThrow();
        while (true) {
            JobStatus status = job.getJobStatus().get();
            if (status == JobStatus.RUNNING) {
                break;
            }
            if (status.isTerminalState()) {
                throw new IllegalStateException("job ended before it ran: " + status);
            }
            Thread.sleep(50);
        }
        System.out.println("RUNNING");
        System.out.flush();
        result.await();
    }
}
