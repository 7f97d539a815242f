package quire.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/**
 * Smoke test of the stock Java client against a Pulsar-protocol server.
 * Usage: Smoke SERVICE_URL TOPIC N
 * Produces N messages (half batched, half not), consumes and acks them with a
 * durable subscription checking content and order, then reads them all with a
 * reader from earliest. Last line of stdout: "RESULT OK ..." or "RESULT FAIL ...";
 * exit status 0 only on OK.
 */
public final class Smoke {
    private static void fail(String why) {
        System.out.println("RESULT FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            fail("usage: Smoke SERVICE_URL TOPIC N");
        }
        String url = args[0];
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        int half = n / 2;

        try (PulsarClient client = PulsarClient.builder()
                .serviceUrl(url)
                .operationTimeout(15, TimeUnit.SECONDS)
                .connectionTimeout(5, TimeUnit.SECONDS)
                .build()) {
            // Subscribe first (Earliest anyway) so the subscription exists before producing.
            Consumer<byte[]> consumer = client.newConsumer()
                    .topic(topic)
                    .subscriptionName("java-smoke")
                    .subscriptionType(SubscriptionType.Exclusive)
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                    .subscribe();

            List<MessageId> ids = new ArrayList<>();
            try (Producer<byte[]> plain = client.newProducer().topic(topic)
                    .enableBatching(false).create()) {
                for (int i = 0; i < half; i++) {
                    ids.add(plain.send(("java-" + i).getBytes(StandardCharsets.UTF_8)));
                }
            }
            try (Producer<byte[]> batched = client.newProducer().topic(topic)
                    .enableBatching(true)
                    .batchingMaxMessages(50)
                    .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS)
                    .create()) {
                List<java.util.concurrent.CompletableFuture<MessageId>> futures = new ArrayList<>();
                for (int i = half; i < n; i++) {
                    futures.add(batched.sendAsync(("java-" + i).getBytes(StandardCharsets.UTF_8)));
                }
                batched.flush();
                for (var f : futures) {
                    ids.add(f.get(15, TimeUnit.SECONDS));
                }
            }
            for (int i = 1; i < ids.size(); i++) {
                if (ids.get(i).compareTo(ids.get(i - 1)) <= 0) {
                    fail("message ids not increasing at " + i + ": " + ids.get(i - 1) + " then " + ids.get(i));
                }
            }

            for (int i = 0; i < n; i++) {
                Message<byte[]> m = consumer.receive(10, TimeUnit.SECONDS);
                if (m == null) {
                    fail("consumer: timeout after " + i + " of " + n + " messages");
                }
                String got = new String(m.getData(), StandardCharsets.UTF_8);
                if (!got.equals("java-" + i)) {
                    fail("consumer: message " + i + " is '" + got + "'");
                }
                consumer.acknowledge(m);
            }
            Message<byte[]> extra = consumer.receive(500, TimeUnit.MILLISECONDS);
            if (extra != null) {
                fail("consumer: unexpected extra message '" + new String(extra.getData(), StandardCharsets.UTF_8) + "'");
            }
            consumer.close();

            int read = 0;
            try (Reader<byte[]> reader = client.newReader().topic(topic)
                    .startMessageId(MessageId.earliest).create()) {
                while (read < n) {
                    Message<byte[]> m = reader.readNext(10, TimeUnit.SECONDS);
                    if (m == null) {
                        fail("reader: timeout after " + read + " of " + n + " messages");
                    }
                    String got = new String(m.getData(), StandardCharsets.UTF_8);
                    if (!got.equals("java-" + read)) {
                        fail("reader: message " + read + " is '" + got + "'");
                    }
                    read++;
                }
                if (reader.hasMessageAvailable()) {
                    fail("reader: hasMessageAvailable true after reading all");
                }
            }
            System.out.println("RESULT OK produced=" + n + " consumed=" + n + " read=" + read);
            System.out.flush();
        } catch (Exception e) {
            fail("exception: " + e);
        }
        System.exit(0);
    }
}
