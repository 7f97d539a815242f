/*
 * commands.c — builders of the broker's commands (contract: commands.h).
 *
 * Each builder fills protobuf-c structs on its own stack, pointing at the
 * caller's strings (the const is cast away only for protobuf-c's field types:
 * packing never writes through them), then frame_encode_command packs them
 * into a new buffer after checking required fields. Nothing here allocates
 * except that buffer.
 */
#include "server/codec/commands.h"

#include <errno.h>
#include <string.h>

#include "common/errors.h"
#include "server/codec/frame.h"

/* Encodes base (whose type and field the caller set). */
static int cmd_encode_base(Pulsar__Proto__BaseCommand *base, qbuf_t **out)
{
    return frame_encode_command(base, out);
}

static void cmd_fill_id(Pulsar__Proto__MessageIdData *idd, const cmd_message_id_t *id)
{
    pulsar__proto__message_id_data__init(idd);
    idd->ledgerid = (uint64_t)id->ledger_id;
    idd->entryid = (uint64_t)id->entry_id;
    if (id->partition >= 0) {
        idd->has_partition = 1;
        idd->partition = id->partition;
    }
    if (id->batch_index >= 0) {
        idd->has_batch_index = 1;
        idd->batch_index = id->batch_index;
    }
}

/* ---------------------------------------------------------------- handshake */

int cmd_encode_connected(const char *server_version, int32_t protocol_version,
                         int32_t max_message_size, const Pulsar__Proto__FeatureFlags *flags,
                         qbuf_t **out)
{
    if (!server_version)
        return QE_INVALID;
    Pulsar__Proto__CommandConnected c = PULSAR__PROTO__COMMAND_CONNECTED__INIT;
    c.server_version = (char *)server_version;
    c.has_protocol_version = 1;
    c.protocol_version = protocol_version;
    if (max_message_size > 0) {
        c.has_max_message_size = 1;
        c.max_message_size = max_message_size;
    }
    c.feature_flags = (Pulsar__Proto__FeatureFlags *)flags;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECTED;
    base.connected = &c;
    return cmd_encode_base(&base, out);
}

int cmd_encode_ping(qbuf_t **out)
{
    Pulsar__Proto__CommandPing p = PULSAR__PROTO__COMMAND_PING__INIT;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PING;
    base.ping = &p;
    return cmd_encode_base(&base, out);
}

int cmd_encode_pong(qbuf_t **out)
{
    Pulsar__Proto__CommandPong p = PULSAR__PROTO__COMMAND_PONG__INIT;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PONG;
    base.pong = &p;
    return cmd_encode_base(&base, out);
}

/* ---------------------------------------------------------------- generic replies */

int cmd_encode_success(uint64_t request_id, const Pulsar__Proto__Schema *schema, qbuf_t **out)
{
    Pulsar__Proto__CommandSuccess s = PULSAR__PROTO__COMMAND_SUCCESS__INIT;
    s.request_id = request_id;
    s.schema = (Pulsar__Proto__Schema *)schema;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS;
    base.success = &s;
    return cmd_encode_base(&base, out);
}

int cmd_encode_error(uint64_t request_id, Pulsar__Proto__ServerError error, const char *message,
                     qbuf_t **out)
{
    if (!message)
        return QE_INVALID;
    Pulsar__Proto__CommandError e = PULSAR__PROTO__COMMAND_ERROR__INIT;
    e.request_id = request_id;
    e.error = error;
    e.message = (char *)message;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR;
    base.error = &e;
    return cmd_encode_base(&base, out);
}

/* ---------------------------------------------------------------- producers */

int cmd_encode_producer_success(uint64_t request_id, const char *producer_name,
                                int64_t last_sequence_id, const uint8_t *schema_version,
                                size_t schema_version_len, int64_t topic_epoch, bool producer_ready,
                                qbuf_t **out)
{
    if (!producer_name || (schema_version_len && !schema_version))
        return QE_INVALID;
    Pulsar__Proto__CommandProducerSuccess s = PULSAR__PROTO__COMMAND_PRODUCER_SUCCESS__INIT;
    s.request_id = request_id;
    s.producer_name = (char *)producer_name;
    s.has_last_sequence_id = 1;
    s.last_sequence_id = last_sequence_id;
    if (schema_version) {
        s.has_schema_version = 1;
        s.schema_version.data = (uint8_t *)schema_version;
        s.schema_version.len = schema_version_len;
    }
    if (topic_epoch >= 0) {
        s.has_topic_epoch = 1;
        s.topic_epoch = (uint64_t)topic_epoch;
    }
    s.has_producer_ready = 1;
    s.producer_ready = producer_ready;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS;
    base.producer_success = &s;
    return cmd_encode_base(&base, out);
}

int cmd_encode_send_receipt(uint64_t producer_id, uint64_t sequence_id,
                            uint64_t highest_sequence_id, const cmd_message_id_t *id, qbuf_t **out)
{
    if (!id)
        return QE_INVALID;
    Pulsar__Proto__MessageIdData idd;
    cmd_fill_id(&idd, id);
    Pulsar__Proto__CommandSendReceipt r = PULSAR__PROTO__COMMAND_SEND_RECEIPT__INIT;
    r.producer_id = producer_id;
    r.sequence_id = sequence_id;
    r.message_id = &idd;
    r.has_highest_sequence_id = 1;
    r.highest_sequence_id = highest_sequence_id;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT;
    base.send_receipt = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_send_error(uint64_t producer_id, uint64_t sequence_id,
                          Pulsar__Proto__ServerError error, const char *message, qbuf_t **out)
{
    if (!message)
        return QE_INVALID;
    Pulsar__Proto__CommandSendError e = PULSAR__PROTO__COMMAND_SEND_ERROR__INIT;
    e.producer_id = producer_id;
    e.sequence_id = sequence_id;
    e.error = error;
    e.message = (char *)message;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_ERROR;
    base.send_error = &e;
    return cmd_encode_base(&base, out);
}

int cmd_encode_close_producer(uint64_t producer_id, uint64_t request_id, const char *assigned_url,
                              const char *assigned_url_tls, qbuf_t **out)
{
    Pulsar__Proto__CommandCloseProducer c = PULSAR__PROTO__COMMAND_CLOSE_PRODUCER__INIT;
    c.producer_id = producer_id;
    c.request_id = request_id;
    c.assignedbrokerserviceurl = (char *)assigned_url;
    c.assignedbrokerserviceurltls = (char *)assigned_url_tls;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER;
    base.close_producer = &c;
    return cmd_encode_base(&base, out);
}

/* ---------------------------------------------------------------- lookup */

int cmd_encode_lookup_response(uint64_t request_id,
                               Pulsar__Proto__CommandLookupTopicResponse__LookupType type,
                               const char *broker_url, const char *broker_url_tls,
                               bool authoritative, qbuf_t **out)
{
    if (!broker_url || type == PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Failed)
        return QE_INVALID;
    Pulsar__Proto__CommandLookupTopicResponse r =
        PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__INIT;
    r.request_id = request_id;
    r.has_response = 1;
    r.response = type;
    r.brokerserviceurl = (char *)broker_url;
    r.brokerserviceurltls = (char *)broker_url_tls;
    r.has_authoritative = 1;
    r.authoritative = authoritative;
    r.has_proxy_through_service_url = 1;
    r.proxy_through_service_url = 0;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP_RESPONSE;
    base.lookuptopicresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_lookup_failed(uint64_t request_id, Pulsar__Proto__ServerError error,
                             const char *message, qbuf_t **out)
{
    Pulsar__Proto__CommandLookupTopicResponse r =
        PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__INIT;
    r.request_id = request_id;
    r.has_response = 1;
    r.response = PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Failed;
    r.has_error = 1;
    r.error = error;
    r.message = (char *)message;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP_RESPONSE;
    base.lookuptopicresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_partitioned_metadata_response(uint64_t request_id, uint32_t partitions, qbuf_t **out)
{
    Pulsar__Proto__CommandPartitionedTopicMetadataResponse r =
        PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__INIT;
    r.request_id = request_id;
    r.has_response = 1;
    r.response = PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__LOOKUP_TYPE__Success;
    r.has_partitions = 1;
    r.partitions = partitions;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA_RESPONSE;
    base.partitionmetadataresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_partitioned_metadata_failed(uint64_t request_id, Pulsar__Proto__ServerError error,
                                           const char *message, qbuf_t **out)
{
    Pulsar__Proto__CommandPartitionedTopicMetadataResponse r =
        PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__INIT;
    r.request_id = request_id;
    r.has_response = 1;
    r.response = PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__LOOKUP_TYPE__Failed;
    r.has_error = 1;
    r.error = error;
    r.message = (char *)message;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA_RESPONSE;
    base.partitionmetadataresponse = &r;
    return cmd_encode_base(&base, out);
}

/* ---------------------------------------------------------------- consumers */

void cmd_fill_message(Pulsar__Proto__BaseCommand *cmd, Pulsar__Proto__CommandMessage *msg,
                      Pulsar__Proto__MessageIdData *idd, uint64_t consumer_id,
                      const cmd_message_id_t *id, uint32_t redelivery_count, const int64_t *ack_set,
                      size_t n_ack_set)
{
    cmd_fill_id(idd, id);
    pulsar__proto__command_message__init(msg);
    msg->consumer_id = consumer_id;
    msg->message_id = idd;
    if (redelivery_count > 0) {
        msg->has_redelivery_count = 1;
        msg->redelivery_count = redelivery_count;
    }
    if (ack_set && n_ack_set > 0) {
        msg->n_ack_set = n_ack_set;
        msg->ack_set = (int64_t *)ack_set;
    }
    pulsar__proto__base_command__init(cmd);
    cmd->type = PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE;
    cmd->message = msg;
}

int cmd_encode_message_header(uint64_t consumer_id, const cmd_message_id_t *id,
                              uint32_t redelivery_count, const int64_t *ack_set, size_t n_ack_set,
                              const uint8_t *bem, size_t bem_len, const uint8_t *stored,
                              size_t stored_len, uint8_t *hdr, size_t hdr_cap, size_t *hdr_len)
{
    if (!id)
        return QE_INVALID;
    Pulsar__Proto__BaseCommand base;
    Pulsar__Proto__CommandMessage msg;
    Pulsar__Proto__MessageIdData idd;
    cmd_fill_message(&base, &msg, &idd, consumer_id, id, redelivery_count, ack_set, n_ack_set);
    return frame_encode_message_header_bem(&base, bem, bem_len, stored, stored_len, hdr, hdr_cap,
                                           hdr_len);
}

int cmd_encode_message(uint64_t consumer_id, const cmd_message_id_t *id, uint32_t redelivery_count,
                       const int64_t *ack_set, size_t n_ack_set, const uint8_t *stored,
                       size_t stored_len, qbuf_t **out)
{
    if (!id || !stored)
        return QE_INVALID;
    Pulsar__Proto__BaseCommand base;
    Pulsar__Proto__CommandMessage msg;
    Pulsar__Proto__MessageIdData idd;
    cmd_fill_message(&base, &msg, &idd, consumer_id, id, redelivery_count, ack_set, n_ack_set);
    size_t hdr_cap = frame_message_header_size(&base, 0, stored, stored_len);
    if (stored_len > QBUF_MAX || hdr_cap > QBUF_MAX - stored_len)
        return QE_TOO_LARGE;
    qbuf_t *b = qbuf_new(hdr_cap + stored_len);
    if (!b)
        return -ENOMEM;
    size_t hdr_len = 0;
    int rc = frame_encode_message_header(&base, stored, stored_len, b->data, hdr_cap, &hdr_len);
    if (rc != 0) {
        qbuf_unref(b);
        return rc;
    }
    memcpy(b->data + hdr_len, stored, stored_len);
    b->len = (uint32_t)(hdr_len + stored_len);
    *out = b;
    return 0;
}

int cmd_encode_get_last_message_id_response(uint64_t request_id, const cmd_message_id_t *last,
                                            const cmd_message_id_t *mark_delete, qbuf_t **out)
{
    if (!last)
        return QE_INVALID;
    Pulsar__Proto__MessageIdData l, md;
    cmd_fill_id(&l, last);
    Pulsar__Proto__CommandGetLastMessageIdResponse r =
        PULSAR__PROTO__COMMAND_GET_LAST_MESSAGE_ID_RESPONSE__INIT;
    r.request_id = request_id;
    r.last_message_id = &l;
    if (mark_delete) {
        cmd_fill_id(&md, mark_delete);
        r.consumer_mark_delete_position = &md;
    }
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__GET_LAST_MESSAGE_ID_RESPONSE;
    base.getlastmessageidresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_ack_response(uint64_t consumer_id, uint64_t request_id, int server_error,
                            const char *message, qbuf_t **out)
{
    Pulsar__Proto__CommandAckResponse r = PULSAR__PROTO__COMMAND_ACK_RESPONSE__INIT;
    r.consumer_id = consumer_id;
    r.has_request_id = 1;
    r.request_id = request_id;
    if (server_error != CMD_NO_ERROR) {
        if (server_error < 0)
            return QE_INVALID;
        r.has_error = 1;
        r.error = (Pulsar__Proto__ServerError)server_error;
    }
    r.message = (char *)message;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ACK_RESPONSE;
    base.ackresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_close_consumer(uint64_t consumer_id, uint64_t request_id, const char *assigned_url,
                              const char *assigned_url_tls, qbuf_t **out)
{
    Pulsar__Proto__CommandCloseConsumer c = PULSAR__PROTO__COMMAND_CLOSE_CONSUMER__INIT;
    c.consumer_id = consumer_id;
    c.request_id = request_id;
    c.assignedbrokerserviceurl = (char *)assigned_url;
    c.assignedbrokerserviceurltls = (char *)assigned_url_tls;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER;
    base.close_consumer = &c;
    return cmd_encode_base(&base, out);
}

int cmd_encode_active_consumer_change(uint64_t consumer_id, bool is_active, qbuf_t **out)
{
    Pulsar__Proto__CommandActiveConsumerChange c =
        PULSAR__PROTO__COMMAND_ACTIVE_CONSUMER_CHANGE__INIT;
    c.consumer_id = consumer_id;
    c.has_is_active = 1;
    c.is_active = is_active;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__ACTIVE_CONSUMER_CHANGE;
    base.active_consumer_change = &c;
    return cmd_encode_base(&base, out);
}

int cmd_encode_reached_end_of_topic(uint64_t consumer_id, qbuf_t **out)
{
    Pulsar__Proto__CommandReachedEndOfTopic r = PULSAR__PROTO__COMMAND_REACHED_END_OF_TOPIC__INIT;
    r.consumer_id = consumer_id;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__REACHED_END_OF_TOPIC;
    base.reachedendoftopic = &r;
    return cmd_encode_base(&base, out);
}

/* ---------------------------------------------------------------- namespaces, schemas */

int cmd_encode_get_topics_of_namespace_response(uint64_t request_id, const char *const *topics,
                                                size_t n, bool filtered, const char *topics_hash,
                                                bool changed, qbuf_t **out)
{
    if (n > 0 && !topics)
        return QE_INVALID;
    for (size_t i = 0; i < n; i++)
        if (!topics[i])
            return QE_INVALID;
    Pulsar__Proto__CommandGetTopicsOfNamespaceResponse r =
        PULSAR__PROTO__COMMAND_GET_TOPICS_OF_NAMESPACE_RESPONSE__INIT;
    r.request_id = request_id;
    r.n_topics = n;
    r.topics = (char **)topics;
    r.has_filtered = 1;
    r.filtered = filtered;
    r.topics_hash = (char *)topics_hash;
    r.has_changed = 1;
    r.changed = changed;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE_RESPONSE;
    base.gettopicsofnamespaceresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_get_schema_response(uint64_t request_id, const Pulsar__Proto__Schema *schema,
                                   const uint8_t *schema_version, size_t schema_version_len,
                                   qbuf_t **out)
{
    if (!schema || (schema_version_len && !schema_version))
        return QE_INVALID;
    Pulsar__Proto__CommandGetSchemaResponse r = PULSAR__PROTO__COMMAND_GET_SCHEMA_RESPONSE__INIT;
    r.request_id = request_id;
    r.schema = (Pulsar__Proto__Schema *)schema;
    if (schema_version) {
        r.has_schema_version = 1;
        r.schema_version.data = (uint8_t *)schema_version;
        r.schema_version.len = schema_version_len;
    }
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA_RESPONSE;
    base.getschemaresponse = &r;
    return cmd_encode_base(&base, out);
}

int cmd_encode_get_schema_error(uint64_t request_id, Pulsar__Proto__ServerError error,
                                const char *message, qbuf_t **out)
{
    Pulsar__Proto__CommandGetSchemaResponse r = PULSAR__PROTO__COMMAND_GET_SCHEMA_RESPONSE__INIT;
    r.request_id = request_id;
    r.has_error_code = 1;
    r.error_code = error;
    r.error_message = (char *)message;
    Pulsar__Proto__BaseCommand base = PULSAR__PROTO__BASE_COMMAND__INIT;
    base.type = PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA_RESPONSE;
    base.getschemaresponse = &r;
    return cmd_encode_base(&base, out);
}
