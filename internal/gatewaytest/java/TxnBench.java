// Transactional throughput for gateway-bench -txn: one Java producer sends
// RECORDS values of about VALUE_BYTES bytes, {"producer": "bench", "seq": n,
// "payload": "..."}, either in transactions of PER_TXN records (mode txn:
// begin, send, commit) or without transactions (mode plain: the same
// producer, idempotent, flushed every PER_TXN records so that both wait for
// acknowledgements equally often; mode stream: flushed once at the end, as
// a producer without transactions usually runs).
// Usage: TxnBench <bootstrap> <topic> <txn|plain|stream> <records> <per txn> <value bytes>
// Prints "records=<n> secs=<elapsed>" once every record is acknowledged
// (committed, in mode txn).
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnBench {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], mode = args[2];
        int records = Integer.parseInt(args[3]), perTxn = Integer.parseInt(args[4]), valueBytes = Integer.parseInt(args[5]);
        boolean txn = mode.equals("txn");
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024);
        if (txn) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "bench-" + topic);
        }
        String pad = "x".repeat(Math.max(0, valueBytes - 60));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            if (txn) {
                producer.initTransactions();
            }
            long start = System.nanoTime();
            for (int n = 0; n < records; ) {
                if (txn) {
                    producer.beginTransaction();
                }
                int end = Math.min(records, n + perTxn);
                for (; n < end; n++) {
                    producer.send(new ProducerRecord<>(topic,
                            "{\"producer\": \"bench\", \"seq\": " + n + ", \"payload\": \"" + pad + "\"}"));
                }
                if (txn) {
                    producer.commitTransaction();
                } else if (!mode.equals("stream")) {
                    producer.flush();
                }
            }
            producer.flush();
            double secs = (System.nanoTime() - start) / 1e9;
            System.out.printf("records=%d secs=%.3f%n", records, secs);
        }
    }
}
