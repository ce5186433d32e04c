// Produces records with the Java Kafka client for kafkaproto's tests.
// Usage: ProduceMain <bootstrap> <records per topic> <codec>...
// For each codec it produces to topic "java-<codec>" with the client's
// defaults (idempotent, acks=all) and prints "<topic> <partition> <offset> <value>"
// for every acknowledged record.
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class ProduceMain {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int n = Integer.parseInt(args[1]);
        for (int a = 2; a < args.length; a++) {
            String codec = args[a];
            String topic = "java-" + codec;
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20000);
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
            p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
            try (KafkaProducer<String, String> producer =
                    new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                List<String> values = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    String value = "java " + codec + " " + i + " " + "compressible ".repeat(20);
                    ProducerRecord<String, String> rec = new ProducerRecord<>(topic, "k" + i, value);
                    rec.headers().add("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                    acks.add(producer.send(rec));
                    values.add(value);
                }
                for (int i = 0; i < n; i++) {
                    RecordMetadata md = acks.get(i).get();
                    System.out.println(topic + " " + md.partition() + " " + md.offset() + " " + values.get(i));
                }
            }
        }
    }
}
