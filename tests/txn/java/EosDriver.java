// Apache Kafka's Java client (kafka-clients 3.9.1) running the exactly-once scenario of issue #24
// through the sidecar: a read_committed KafkaConsumer and a transactional KafkaProducer that sends
// the group's offsets with sendOffsetsToTransaction(positions, consumer.groupMetadata()).
// One transaction is aborted midway (its records flushed first) and the consumer rewound; once, a
// second producer with the same transactional.id fences the first mid-transaction. The Python test
// (tests/txn/test_java_eos.py) checks the output and the committed offsets.
//
// Usage: EosDriver BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID RECORDS PROTOCOL
// Prints one line per event; exits 0 once RECORDS records were committed in transactions.
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class EosDriver {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3], txnId = args[4];
        int expected = Integer.parseInt(args[5]);
        String protocol = args[6];
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("group.protocol", protocol);
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", "read_committed");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", "3");
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c);
        consumer.subscribe(List.of(input));
        KafkaProducer<byte[], byte[]> producer = producer(bootstrap, txnId);
        int done = 0, transactions = 0;
        boolean aborted = false, fenced = false;
        long deadline = System.currentTimeMillis() + 120_000;
        while (done < expected) {
            if (System.currentTimeMillis() > deadline) {
                System.out.println("TIMEOUT committed=" + done);
                System.exit(2);
            }
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) continue;
            producer.beginTransaction();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                producer.send(new ProducerRecord<>(output, r.key(), r.value()));
            }
            Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
            for (TopicPartition tp : consumer.assignment()) {
                positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
            }
            if (transactions == 1 && !aborted) {
                Map<TopicPartition, OffsetAndMetadata> before = consumer.committed(consumer.assignment());
                producer.flush();
                producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
                producer.abortTransaction();
                rewind(consumer, before, "abort");
                aborted = true;
                System.out.println("ABORTED");
                continue;
            }
            if (transactions == 3 && !fenced) {
                Map<TopicPartition, OffsetAndMetadata> before = consumer.committed(consumer.assignment());
                producer.flush();
                KafkaProducer<byte[], byte[]> zombie = producer;
                producer = producer(bootstrap, txnId);
                try {
                    zombie.sendOffsetsToTransaction(positions, consumer.groupMetadata());
                    zombie.commitTransaction();
                    System.out.println("ZOMBIE COMMITTED");
                    System.exit(3);
                } catch (KafkaException e) {
                    System.out.println("FENCED " + e.getClass().getSimpleName());
                }
                zombie.close(Duration.ZERO);
                rewind(consumer, before, "fence");
                fenced = true;
                continue;
            }
            producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
            producer.commitTransaction();
            transactions++;
            done += records.count();
        }
        System.out.println("DONE transactions=" + transactions + " aborted=" + aborted + " fenced=" + fenced);
        producer.close();
        consumer.close();
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("transaction.timeout.ms", "20000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    // Back to the committed offsets, which must be those from before the aborted transaction.
    static void rewind(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, OffsetAndMetadata> before, String why) {
        Set<TopicPartition> assignment = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> now = consumer.committed(assignment);
        if (!now.equals(before)) {
            System.out.println("MOVED by " + why + ": " + before + " -> " + now);
            System.exit(4);
        }
        for (TopicPartition tp : assignment) {
            OffsetAndMetadata committed = now.get(tp);
            if (committed == null) consumer.seekToBeginning(List.of(tp));
            else consumer.seek(tp, committed.offset());
        }
    }
}
