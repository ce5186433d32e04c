// A Java transactional producer for the gateway's crash-mid-commit test.
// Usage: TxnCrashMain <bootstrap> <topic> <transactional id> <producer name> <records>
// It sends {"producer": name, "seq": n} for n in [0, records) in one
// transaction, flushes, prints "FLUSHED" and waits for a line on stdin
// before committing (the test arms the crash meanwhile), then prints
// "COMMITTED" (or "FAILED <exception>"). Java retries an EndTxn whose
// connection died, so the commit reaches whatever instance answers on the
// address next. A second transaction of [records, records + 10) follows
// and prints "COMMITTED" again; "D" at the end.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnCrashMain {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], txnId = args[2], name = args[3];
        int records = Integer.parseInt(args[4]);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 180_000);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            pr.initTransactions();
            pr.beginTransaction();
            for (int n = 0; n < records; n++) {
                pr.send(new ProducerRecord<>(topic, "{\"producer\": \"" + name + "\", \"seq\": " + n + "}"));
            }
            pr.flush();
            System.out.println("FLUSHED");
            System.out.flush();
            in.readLine();
            try {
                pr.commitTransaction();
                System.out.println("COMMITTED");
            } catch (Exception e) {
                System.out.println("FAILED " + e);
                System.out.flush();
                return;
            }
            System.out.flush();
            pr.beginTransaction();
            for (int n = records; n < records + 10; n++) {
                pr.send(new ProducerRecord<>(topic, "{\"producer\": \"" + name + "\", \"seq\": " + n + "}"));
            }
            pr.commitTransaction();
            System.out.println("COMMITTED");
        }
        System.out.println("D");
    }
}
