// A steady idempotent Java producer for the gateway's fault tests.
// Usage: LoadMain <bootstrap> <topic> <producer name> <records per second>
// With the client's defaults (idempotent, acks=all; linger 5 ms) it sends
// {"producer": name, "seq": n} for n = 0, 1, ... at about the given rate
// until its stdin ends, then flushes and closes. It prints "A <n> <waited>"
// for each acknowledged record, "F <n> <waited> <error>" for each failed one
// (waited: microseconds from send to the outcome, time blocked in send
// included) and "D" once closed; stdout is flushed per line so the test
// sees progress live.
import java.io.PrintStream;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class LoadMain {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], name = args[2];
        int rate = Integer.parseInt(args[3]);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        AtomicBoolean stop = StdinStop.watch();

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        // Sends in bursts every 10 ms; rate/100 records per burst.
        int burst = Math.max(1, rate / 100);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            long next = System.nanoTime();
            for (long n = 0; !stop.get(); ) {
                for (int i = 0; i < burst; i++, n++) {
                    final long seq = n;
                    final long sentAt = System.nanoTime();
                    String value = "{\"producer\": \"" + name + "\", \"seq\": " + seq + "}";
                    producer.send(new ProducerRecord<>(topic, value), (md, err) -> {
                        long waited = (System.nanoTime() - sentAt) / 1_000L;
                        synchronized (out) {
                            if (err == null) {
                                out.println("A " + seq + " " + waited);
                            } else {
                                out.println("F " + seq + " " + waited + " " + err.toString().replace('\n', ' '));
                            }
                            out.flush();
                        }
                    });
                }
                next += 10_000_000L;
                long wait = next - System.nanoTime();
                if (wait < -1_000_000_000L) {
                    next = System.nanoTime(); // blocked in send: no catch-up burst
                } else if (wait > 0) {
                    Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                }
            }
            producer.flush();
        }
        synchronized (out) {
            out.println("D");
            out.flush();
        }
    }
}
