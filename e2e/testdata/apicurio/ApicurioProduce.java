// ApicurioProduce: Avro records (one per line of RECORDS, in Avro's JSON encoding of SCHEMA) produced to
// BOOTSTRAP/TOPIC by a KafkaProducer whose value.serializer is Apicurio's own AvroKafkaSerializer
// (io.apicurio.registry.serde.avro.AvroKafkaSerializer: the same class name in serde 2.x and 3.x, so
// this compiles against either). Every further argument KEY=VALUE is a producer/serde config
// (apicurio.registry.url, apicurio.registry.headers.enabled, ...).
//
// For each record it prints one JSON line to stdout:
//   {"index":I,"partition":P,"offset":O,"value":"HEX","headers":{"NAME":"HEX",...}}
// or {"index":I,"error":"..."} when the send failed. "value" is what a second instance of the
// serializer, configured the same, makes of the record (the bytes the producer sent);
// "headers" are those the producer's serializer added to the sent record. Exit status 1 if
// any record failed.
//
// usage: java ApicurioProduce BOOTSTRAP TOPIC SCHEMA.avsc RECORDS.jsonl [KEY=VALUE ...]

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serializer;

public class ApicurioProduce {
    static final String SERIALIZER = "io.apicurio.registry.serde.avro.AvroKafkaSerializer";

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: ApicurioProduce BOOTSTRAP TOPIC SCHEMA.avsc RECORDS.jsonl [KEY=VALUE ...]");
            System.exit(2);
        }
        String bootstrap = args[0], topic = args[1];
        Schema schema = new Schema.Parser().parse(new File(args[2]));
        Map<String, Object> serde = new HashMap<>();
        for (int i = 4; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq < 1) {
                System.err.println("not KEY=VALUE: " + args[i]);
                System.exit(2);
            }
            serde.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        GenericDatumReader<GenericRecord> reader = new GenericDatumReader<>(schema);
        List<GenericRecord> records = new ArrayList<>();
        for (String line : Files.readAllLines(new File(args[3]).toPath(), StandardCharsets.UTF_8)) {
            if (!line.isBlank()) {
                records.add(reader.read(null, DecoderFactory.get().jsonDecoder(schema, line)));
            }
        }

        @SuppressWarnings("unchecked")
        Serializer<Object> probe = (Serializer<Object>) Class.forName(SERIALIZER).getDeclaredConstructor().newInstance();
        probe.configure(serde, false);

        Properties props = new Properties();
        props.putAll(serde);
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", SERIALIZER);
        props.put("acks", "all");
        props.put("linger.ms", "5");
        props.put("delivery.timeout.ms", "60000");
        props.put("request.timeout.ms", "30000");

        List<ProducerRecord<byte[], Object>> sent = new ArrayList<>();
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        List<Exception> sendErrors = new ArrayList<>();
        try (KafkaProducer<byte[], Object> producer = new KafkaProducer<>(props)) {
            for (GenericRecord r : records) {
                ProducerRecord<byte[], Object> pr = new ProducerRecord<>(topic, null, r);
                sent.add(pr);
                try {
                    futures.add(producer.send(pr));
                    sendErrors.add(null);
                } catch (Exception e) { // serialization fails in send itself
                    futures.add(null);
                    sendErrors.add(e);
                }
            }
            producer.flush();
        }

        boolean failed = false;
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < records.size(); i++) {
            out.setLength(0);
            out.append("{\"index\":").append(i);
            try {
                if (sendErrors.get(i) != null) {
                    throw sendErrors.get(i);
                }
                RecordMetadata md = futures.get(i).get();
                byte[] value = probe.serialize(topic, new RecordHeaders(), records.get(i));
                out.append(",\"partition\":").append(md.partition()).append(",\"offset\":").append(md.offset());
                out.append(",\"value\":\"").append(hex(value)).append("\",\"headers\":{");
                String sep = "";
                for (Header h : sent.get(i).headers()) {
                    out.append(sep).append(quote(h.key())).append(":\"").append(hex(h.value())).append('"');
                    sep = ",";
                }
                out.append('}');
            } catch (Exception e) {
                failed = true;
                Throwable c = e.getCause() != null && e.getCause() != e ? e.getCause() : e;
                out.append(",\"error\":").append(quote(c.getClass().getName() + ": " + c.getMessage()));
            }
            System.out.println(out.append('}'));
        }
        probe.close();
        System.exit(failed ? 1 : 0);
    }

    static String hex(byte[] b) {
        if (b == null) {
            return "";
        }
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) {
            s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return s.toString();
    }

    static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        for (char c : String.valueOf(s).toCharArray()) {
            if (c == '"' || c == '\\') {
                q.append('\\').append(c);
            } else if (c < 0x20) {
                q.append(String.format("\\u%04x", (int) c));
            } else {
                q.append(c);
            }
        }
        return q.append('"').toString();
    }
}
