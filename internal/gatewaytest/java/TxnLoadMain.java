// A Java transactional producer looping transactions for the gateway's fault tests.
// Usage: TxnLoadMain <bootstrap> <topic> <producer name> <transactional id> <records per transaction>
// Transaction k sends {"producer": name, "seq": n} for n in [k*size, (k+1)*size) and commits, except
// every fourth (k % 4 == 3), which it aborts, until its stdin ends; the transaction under way is
// ended first. It prints "C <k>" for a committed transaction, "X <k>" for an aborted one and
// "E <k> <error>" for one whose end failed (its outcome unknown: all of it visible or none), after
// which it closes the producer and starts a new one with the same transactional id (its
// initTransactions settles what the old one left open), "R <error>" for each failed start, and "D"
// once closed; stdout is flushed per line so the test sees progress live.
import java.io.PrintStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnLoadMain {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], name = args[2], txnId = args[3];
        int size = Integer.parseInt(args[4]);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        AtomicBoolean stop = StdinStop.watch();

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 120_000);
        KafkaProducer<String, String> producer = start(p, out, stop);
        for (long k = 0; producer != null && !stop.get(); k++) {
            boolean abort = k % 4 == 3;
            try {
                producer.beginTransaction();
                for (long n = k * size; n < (k + 1) * size; n++) {
                    producer.send(new ProducerRecord<>(topic, "{\"producer\": \"" + name + "\", \"seq\": " + n + "}"));
                }
                if (abort) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
                line(out, (abort ? "X " : "C ") + k);
            } catch (Exception e) {
                line(out, "E " + k + " " + e.toString().replace('\n', ' '));
                producer.close(Duration.ofSeconds(5));
                producer = start(p, out, stop);
            }
        }
        if (producer != null) {
            producer.close();
        }
        line(out, "D");
    }

    /** A new producer with its transactions initialized, tried until it works or the test stops. */
    static KafkaProducer<String, String> start(Properties p, PrintStream out, AtomicBoolean stop) throws InterruptedException {
        while (!stop.get()) {
            KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
            try {
                producer.initTransactions();
                return producer;
            } catch (Exception e) {
                line(out, "R " + e.toString().replace('\n', ' '));
                producer.close(Duration.ofSeconds(5));
                Thread.sleep(1000);
            }
        }
        return null;
    }

    static void line(PrintStream out, String s) {
        out.println(s);
        out.flush();
    }
}
