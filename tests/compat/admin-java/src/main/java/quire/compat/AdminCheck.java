package quire.compat;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.common.policies.data.PartitionedTopicStats;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;
import org.apache.pulsar.common.policies.data.Policies;
import org.apache.pulsar.common.policies.data.RetentionPolicies;
import org.apache.pulsar.common.policies.data.SubscriptionStats;
import org.apache.pulsar.common.policies.data.TenantInfo;
import org.apache.pulsar.common.policies.data.TopicStats;

/**
 * The Java PulsarAdmin against Quire: every call below deserializes Quire's JSON
 * into PulsarAdmin's typed classes (TopicStats, PersistentTopicInternalStats,
 * PartitionedTopicStats, Policies, TenantInfo, ...), so a wrong field type or
 * shape fails here.
 *
 * Usage: AdminCheck WEB_URL TOPIC PARTITIONED_TOPIC NAMESPACE TENANT N
 *   TOPIC has N messages and a subscription "sub" with all N in its backlog;
 *   PARTITIONED_TOPIC has 2 partitions; NAMESPACE has retention 60 min / 100 MB.
 * Prints "CHECK name ..." per call and "RESULT OK" at the end; exit 1 on the
 * first failure (with its stack trace).
 */
public final class AdminCheck {
    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
        System.out.println("CHECK " + what);
    }

    public static void main(String[] args) throws Exception {
        String url = args[0], topic = args[1], parted = args[2], ns = args[3], tenant = args[4];
        long n = Long.parseLong(args[5]);
        try (PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(url)
                .connectionTimeout(10, TimeUnit.SECONDS).readTimeout(30, TimeUnit.SECONDS)
                .requestTimeout(30, TimeUnit.SECONDS).build()) {
            TopicStats stats = admin.topics().getStats(topic);
            check(stats.getMsgInCounter() == n, "getStats msgInCounter=" + stats.getMsgInCounter());
            SubscriptionStats sub = stats.getSubscriptions().get("sub");
            check(sub != null && sub.getMsgBacklog() == n, "getStats subscription sub backlog");
            check(stats.getStorageSize() > 0, "getStats storageSize=" + stats.getStorageSize());

            PersistentTopicInternalStats internal = admin.topics().getInternalStats(topic);
            check(internal.numberOfEntries == n, "getInternalStats numberOfEntries=" + internal.numberOfEntries);
            check(internal.ledgers.size() >= 1 && internal.cursors.containsKey("sub"),
                  "getInternalStats ledgers and cursor sub");
            check(internal.lastConfirmedEntry != null && internal.lastConfirmedEntry.contains(":"),
                  "getInternalStats lastConfirmedEntry=" + internal.lastConfirmedEntry);

            PartitionedTopicStats pstats = admin.topics().getPartitionedStats(parted, true);
            check(pstats.getMetadata().partitions == 2, "getPartitionedStats partitions=2");

            check(admin.topics().getPartitionedTopicMetadata(parted).partitions == 2,
                  "getPartitionedTopicMetadata");
            List<String> subs = admin.topics().getSubscriptions(topic);
            check(subs.contains("sub"), "getSubscriptions " + subs);
            MessageId last = admin.topics().getLastMessageId(topic);
            check(last != null, "getLastMessageId " + last);
            List<Message<byte[]>> peeked = admin.topics().peekMessages(topic, "sub", 2);
            check(peeked.size() == 2 && new String(peeked.get(0).getValue()).equals("m0"),
                  "peekMessages 2");
            Message<byte[]> examined = admin.topics().examineMessage(topic, "earliest", 1);
            check(new String(examined.getValue()).equals("m0"), "examineMessage earliest 1");
            MessageId byTime = admin.topics().getMessageIdByTimestamp(topic, 0);
            check(byTime != null, "getMessageIdByTimestamp 0 -> " + byTime);

            Policies policies = admin.namespaces().getPolicies(ns);
            RetentionPolicies ret = policies.retention_policies;
            check(ret != null && ret.getRetentionTimeInMinutes() == 60 && ret.getRetentionSizeInMB() == 100,
                  "getPolicies retention");
            check(admin.namespaces().getRetention(ns).getRetentionSizeInMB() == 100, "getRetention");
            Map<?, ?> quotas = admin.namespaces().getBacklogQuotaMap(ns);
            check(quotas != null, "getBacklogQuotaMap " + quotas);

            TenantInfo info = admin.tenants().getTenantInfo(tenant);
            check(info.getAllowedClusters().contains("standalone"), "getTenantInfo " + info);
            check(admin.tenants().getTenants().contains(tenant), "getTenants");
            check(admin.clusters().getClusters().contains("standalone"), "getClusters");
            check(admin.clusters().getCluster("standalone").getBrokerServiceUrl().startsWith("pulsar://"),
                  "getCluster");

            admin.brokers().healthcheck(org.apache.pulsar.common.naming.TopicVersion.V2);
            check(true, "healthcheck");
            System.out.println("RESULT OK");
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.out.println("RESULT FAILED " + t);
            System.exit(1);
        }
    }
}
