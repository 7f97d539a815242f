package quire.compat;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/**
 * Retry-letter and dead-letter topics as the Java client implements them
 * (reconsumeLater publishes to the retry topic with a delivery delay; after
 * maxRedeliverCount retries the message goes to the dead-letter topic).
 * Usage: RetryLetter SERVICE_URL TOPIC
 * Last line of stdout: "RESULT OK ..." or "RESULT FAIL ..."; exit 0 only on OK.
 */
public final class RetryLetter {
    private static void fail(String why) {
        System.out.println("RESULT FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            fail("usage: RetryLetter SERVICE_URL TOPIC");
        }
        String topic = args[1];
        String retry = topic + "-retry";
        String dead = topic + "-dlq";
        int maxRetries = 2;
        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[0])
                                       .operationTimeout(30, TimeUnit.SECONDS).build()) {
            Consumer<byte[]> dlq = client.newConsumer().topic(dead).subscriptionName("dlq-reader")
                                       .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                                       .subscribe();
            Consumer<byte[]> consumer =
                client.newConsumer().topic(topic).subscriptionName("retrying")
                    .subscriptionType(SubscriptionType.Shared).enableRetry(true)
                    .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(maxRetries)
                                          .retryLetterTopic(retry).deadLetterTopic(dead).build())
                    .subscribe();
            try (Producer<byte[]> producer = client.newProducer().topic(topic).create()) {
                producer.send("retry-me".getBytes(StandardCharsets.UTF_8));
            }
            int deliveries = 0;
            long lastAt = 0;
            for (int i = 0; i <= maxRetries; i++) {
                Message<byte[]> m = consumer.receive(20, TimeUnit.SECONDS);
                if (m == null) {
                    fail("delivery " + (i + 1) + " did not arrive");
                }
                String body = new String(m.getValue(), StandardCharsets.UTF_8);
                if (!body.equals("retry-me")) {
                    fail("unexpected payload " + body);
                }
                long now = System.currentTimeMillis();
                if (i > 0 && now - lastAt < 900) {
                    fail("retry " + i + " arrived after " + (now - lastAt) + " ms, before its 1 s delay");
                }
                lastAt = now;
                deliveries++;
                consumer.reconsumeLater(m, 1, TimeUnit.SECONDS);
            }
            Message<byte[]> d = dlq.receive(20, TimeUnit.SECONDS);
            if (d == null) {
                fail("the message did not reach the dead-letter topic");
            }
            if (!new String(d.getValue(), StandardCharsets.UTF_8).equals("retry-me")) {
                fail("dead-letter payload differs");
            }
            dlq.acknowledge(d);
            if (consumer.receive(2, TimeUnit.SECONDS) != null) {
                fail("the message came back after going to the dead-letter topic");
            }
            System.out.println("RESULT OK deliveries=" + deliveries + " dead_lettered=1");
        }
        System.exit(0);
    }
}
