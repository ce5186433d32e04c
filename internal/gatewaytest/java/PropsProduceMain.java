// A Java producer configured by a properties file, for the gateway's tests
// of identities (TLS keystores, SASL mechanisms and login handlers).
// Usage: PropsProduceMain <producer.properties> <topic>
// A property named system.<name> is set as the JVM's system property
// <name> instead (e.g. Kafka's allowed OAuth token endpoint URLs).
// It sends each line of stdin as one record value, waiting for each, and
// prints "A <value>" when acknowledged and "F <value> <error>" when not;
// it exits 0 when every record was acknowledged, 1 otherwise.
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class PropsProduceMain {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            p.load(in);
        }
        for (String name : p.stringPropertyNames()) {
            if (name.startsWith("system.")) {
                System.setProperty(name.substring("system.".length()), p.getProperty(name));
                p.remove(name);
            }
        }
        String topic = args[1];
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        boolean ok = true;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
             BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line; (line = lines.readLine()) != null; ) {
                try {
                    producer.send(new ProducerRecord<>(topic, line)).get();
                    out.println("A " + line);
                } catch (Exception e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    out.println("F " + line + " " + cause.toString().replace('\n', ' '));
                    ok = false;
                }
            }
        }
        System.exit(ok ? 0 : 1);
    }
}
