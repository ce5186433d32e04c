// A transactional Java producer for the gateway's transaction tests.
// Usage: TxnMain <bootstrap> <topic> <transactional id> <producer name> <transactions> <records each>
// Transaction t (0-based) sends {"producer": name, "seq": n} for its
// records and commits, except every third one (t % 3 == 1), which it
// aborts. Then it opens one more transaction, sends its records and, before
// committing, starts a second producer with the same transactional id,
// which fences the first: the first's commit must fail. It prints
// "C <first> <last>" per committed transaction, "A <first> <last>" per
// aborted one, "FENCED <exception class>" for the fenced commit (or
// "NOT-FENCED" if it committed), and "D" at the end.
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnMain {
    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60_000);
        KafkaProducer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        pr.initTransactions();
        return pr;
    }

    static void send(KafkaProducer<String, String> pr, String topic, String name, long from, long to) {
        for (long n = from; n < to; n++) {
            pr.send(new ProducerRecord<>(topic, "{\"producer\": \"" + name + "\", \"seq\": " + n + "}"));
        }
        pr.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], txnId = args[2], name = args[3];
        int transactions = Integer.parseInt(args[4]), each = Integer.parseInt(args[5]);
        KafkaProducer<String, String> first = producer(bootstrap, txnId);
        long n = 0;
        for (int t = 0; t < transactions; t++, n += each) {
            first.beginTransaction();
            send(first, topic, name, n, n + each);
            if (t % 3 == 1) {
                first.abortTransaction();
                System.out.println("A " + n + " " + (n + each - 1));
            } else {
                first.commitTransaction();
                System.out.println("C " + n + " " + (n + each - 1));
            }
            System.out.flush();
        }
        first.beginTransaction();
        send(first, topic, name, n, n + each);
        KafkaProducer<String, String> second = producer(bootstrap, txnId);
        try {
            first.commitTransaction();
            System.out.println("NOT-FENCED");
        } catch (KafkaException e) {
            System.out.println("FENCED " + e.getClass().getSimpleName());
        }
        first.close();
        n += each;
        second.beginTransaction();
        send(second, topic, name, n, n + each);
        second.commitTransaction();
        System.out.println("C " + n + " " + (n + each - 1));
        second.close();
        System.out.println("D");
    }
}
