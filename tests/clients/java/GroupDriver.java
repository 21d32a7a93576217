import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Drives Apache Kafka's Java consumers for tests/clients/test_java.py.
 *
 * Usage: GroupDriver MODE BOOTSTRAP GROUP TOPIC, MODE one of consumer (KIP-848), eager (classic,
 * RangeAssignor), cooperative (classic, CooperativeStickyAssignor). Commands on stdin, one a line:
 * "join NAME", "leave NAME", "quit". Events on stdout, one JSON object a line, written inside the
 * rebalance callbacks before they return (so before the client tells the coordinator), which keeps
 * the order seen by the test causal across members. Each member runs on its own thread, commits
 * synchronously after every batch and, in its revoke callback, commits what it still holds.
 */
public final class GroupDriver {
    private static final Object OUT = new Object();

    static void emit(String json) {
        synchronized (OUT) {
            System.out.println(json);
            System.out.flush();
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String partitions(Collection<TopicPartition> tps) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (TopicPartition tp : tps) {
            sorted.add(tp.partition());
        }
        return sorted.toString().replace(" ", "");
    }

    static String offsets(Map<Integer, Long> offsets) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<Integer, Long> e : new TreeMap<>(offsets).entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return b.append('}').toString();
    }

    static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final String topic;
        final KafkaConsumer<byte[], byte[]> consumer;
        final Map<Integer, Long> pending = new HashMap<>();
        volatile boolean leaving;
        String view = null;
        final Thread thread;

        Member(String name, String mode, String bootstrap, String group, String topic) {
            this.name = name;
            this.topic = topic;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("client.id", name);
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            if (mode.equals("consumer")) {
                p.put("group.protocol", "consumer");
            } else {
                p.put("group.protocol", "classic");
                p.put("session.timeout.ms", "6000");
                p.put("heartbeat.interval.ms", "500");
                p.put(
                        "partition.assignment.strategy",
                        mode.equals("eager")
                                ? "org.apache.kafka.clients.consumer.RangeAssignor"
                                : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            }
            this.consumer = new KafkaConsumer<>(p);
            this.thread = new Thread(this, "member-" + name);
        }

        void event(String kind, String body) {
            emit("{\"ev\":" + quote(kind) + ",\"member\":" + quote(name) + body + "}");
        }

        /** Commits the pending offsets of ``which``; a failure is reported and the offsets stay pending. */
        void commit(Collection<Integer> which) {
            Map<Integer, Long> chosen = new TreeMap<>();
            for (Integer partition : which) {
                Long offset = pending.get(partition);
                if (offset != null) {
                    chosen.put(partition, offset);
                }
            }
            if (chosen.isEmpty()) {
                return;
            }
            Map<TopicPartition, OffsetAndMetadata> request = new HashMap<>();
            for (Map.Entry<Integer, Long> e : chosen.entrySet()) {
                request.put(new TopicPartition(topic, e.getKey()), new OffsetAndMetadata(e.getValue()));
            }
            try {
                consumer.commitSync(request, Duration.ofSeconds(15));
            } catch (WakeupException e) {
                throw e;
            } catch (RuntimeException e) {
                event("commit_error", ",\"offsets\":" + offsets(chosen) + ",\"error\":" + quote(e.getClass().getSimpleName() + ": " + e.getMessage()));
                return;
            }
            event("commit", ",\"offsets\":" + offsets(chosen));
            for (Map.Entry<Integer, Long> e : chosen.entrySet()) {
                pending.remove(e.getKey(), e.getValue());
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            List<Integer> ids = new ArrayList<>();
            for (TopicPartition tp : revoked) {
                ids.add(tp.partition());
            }
            commit(ids);
            for (Integer id : ids) {
                pending.remove(id);
            }
            event("revoke", ",\"partitions\":" + partitions(revoked));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            event("assign", ",\"partitions\":" + partitions(assigned));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            for (TopicPartition tp : lost) {
                pending.remove(tp.partition());
            }
            event("lost", ",\"partitions\":" + partitions(lost));
        }

        @Override
        public void run() {
            try {
                consumer.subscribe(List.of(topic), this);
                while (!leaving) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                    if (!records.isEmpty()) {
                        StringBuilder b = new StringBuilder("[");
                        for (ConsumerRecord<byte[], byte[]> r : records) {
                            if (b.length() > 1) {
                                b.append(',');
                            }
                            b.append('[').append(r.partition()).append(',').append(r.offset()).append(']');
                            pending.put(r.partition(), r.offset() + 1);
                        }
                        event("records", ",\"records\":" + b.append(']'));
                    }
                    commit(new ArrayList<>(pending.keySet()));
                    String now = partitions(consumer.assignment());
                    if (!now.equals(view)) {
                        view = now;
                        event("assignment", ",\"partitions\":" + now);
                    }
                }
                consumer.close(Duration.ofSeconds(20));
                event("left", "");
            } catch (WakeupException e) {
                consumer.close(Duration.ZERO);
            } catch (Throwable e) {
                event("error", ",\"error\":" + quote(e.toString()));
                try {
                    consumer.close(Duration.ZERO);
                } catch (Throwable ignored) {
                    // already reported the first failure
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String bootstrap = args[1];
        String group = args[2];
        String topic = args[3];
        Map<String, Member> members = new ConcurrentHashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        emit("{\"ev\":\"ready\"}");
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            if (words[0].equals("join")) {
                Member m = new Member(words[1], mode, bootstrap, group, topic);
                members.put(words[1], m);
                m.thread.start();
            } else if (words[0].equals("leave")) {
                Member m = members.remove(words[1]);
                m.leaving = true;
            } else if (words[0].equals("quit")) {
                break;
            }
        }
        // Quit or end of input: stop whatever is still running without waiting for the group.
        for (Member m : members.values()) {
            m.leaving = true;
            m.consumer.wakeup();
        }
        for (Member m : members.values()) {
            m.thread.join(30000);
        }
        System.exit(0);
    }
}
