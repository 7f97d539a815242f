package quire.compat;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.schema.GenericRecord;

/**
 * The schema registry with the stock Java client.
 * Usage: SchemaSmoke SERVICE_URL TOPIC
 * 1. An AVRO producer registers version 0 (PRODUCER.schema); an AUTO_CONSUME
 *    consumer decodes it (GET_SCHEMA by the message's schema version).
 * 2. A bytes producer sends messages with per-message schemas
 *    (GET_OR_CREATE_SCHEMA): the known one, a compatible new one (version 1),
 *    then a STRING one, which the broker refuses (IncompatibleSchema).
 * 3. A STRING producer is refused; the exception's message carries the
 *    broker's reason (types and version).
 * Last line of stdout: "RESULT OK ..." or "RESULT FAIL ..."; exit 0 only on OK.
 */
public final class SchemaSmoke {
    /** Version 1 of the record: Avro name "User". */
    public static final class V1 {
        public static class User {
            public String name;
            public int age;

            public User() {
            }

            public User(String name, int age) {
                this.name = name;
                this.age = age;
            }
        }
    }

    /** Version 2: the same name, one more nullable field (FULL-compatible). */
    public static final class V2 {
        public static class User {
            public String name;
            public int age;
            public String email;

            public User() {
            }

            public User(String name, int age, String email) {
                this.name = name;
                this.age = age;
                this.email = email;
            }
        }
    }

    private static void fail(String why) {
        System.out.println("RESULT FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    private static long version(byte[] v) {
        if (v == null || v.length != 8) {
            return -2;
        }
        long x = 0;
        for (byte b : v) {
            x = (x << 8) | (b & 0xff);
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            fail("usage: SchemaSmoke SERVICE_URL TOPIC");
        }
        String url = args[0];
        String topic = args[1];
        try (PulsarClient client = PulsarClient.builder()
                .serviceUrl(url)
                .operationTimeout(15, TimeUnit.SECONDS)
                .connectionTimeout(5, TimeUnit.SECONDS)
                .build()) {
            Consumer<GenericRecord> auto = client.newConsumer(Schema.AUTO_CONSUME())
                    .topic(topic)
                    .subscriptionName("auto")
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                    .subscribe();
            // A typed consumer where the only consumer is AUTO_CONSUME: the
            // topic counts as idle (Pulsar does not count AUTO_CONSUME
            // consumers), so this consumer registers the schema (version 0).
            try (Consumer<V1.User> typedConsumer = client.newConsumer(Schema.AVRO(V1.User.class))
                    .topic(topic)
                    .subscriptionName("typed")
                    .subscribe()) {
                typedConsumer.getSubscription();
            }
            Producer<V1.User> typed = client.newProducer(Schema.AVRO(V1.User.class))
                    .topic(topic)
                    .enableBatching(false)
                    .create();
            typed.send(new V1.User("ada", 36));

            Producer<byte[]> multi = client.newProducer().topic(topic).enableBatching(false).create();
            multi.newMessage(Schema.AVRO(V1.User.class)).value(new V1.User("bob", 41)).send();
            multi.newMessage(Schema.AVRO(V2.User.class)).value(new V2.User("cy", 7, "cy@x")).send();
            boolean refused = false;
            try {
                multi.newMessage(Schema.STRING).value("not a user").send();
            } catch (PulsarClientException.IncompatibleSchemaException e) {
                refused = true;
            }
            if (!refused) {
                fail("a STRING message was accepted on an AVRO topic");
            }
            // A STRING producer is refused too, and the broker's reason is in
            // the exception's message (the types and the version refusing it).
            refused = false;
            try (Producer<String> s = client.newProducer(Schema.STRING).topic(topic).create()) {
                fail("a STRING producer was accepted on an AVRO topic");
            } catch (PulsarClientException.IncompatibleSchemaException e) {
                refused = true;
                String want = "Incompatible schema: exists schema type AVRO, new schema type STRING"
                        + " (schema version 1)";
                if (!String.valueOf(e.getMessage()).contains(want)) {
                    fail("refused without the reason: " + e.getMessage());
                }
            }
            if (!refused) {
                fail("a STRING producer was accepted on an AVRO topic");
            }

            String[] names = {"ada", "bob", "cy"};
            long[] versions = {0, 0, 1};
            for (int i = 0; i < names.length; i++) {
                Message<GenericRecord> m = auto.receive(15, TimeUnit.SECONDS);
                if (m == null) {
                    fail("AUTO_CONSUME received " + i + " of " + names.length);
                }
                Object name = m.getValue().getField("name");
                if (name == null || !names[i].equals(name.toString())) {
                    fail("message " + i + ": name " + name + ", want " + names[i]);
                }
                long v = version(m.getSchemaVersion());
                if (v != versions[i]) {
                    fail("message " + i + ": schema version " + v + " ("
                            + Arrays.toString(m.getSchemaVersion()) + "), want " + versions[i]);
                }
                auto.acknowledge(m);
            }
            System.out.println("RESULT OK consumer_registered=1 typed=1 multi=2 refused=2 auto_consumed=3");
        }
        System.exit(0);
    }
}
