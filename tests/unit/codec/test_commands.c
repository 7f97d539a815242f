/* Unit tests of server/codec/commands: every builder round-trips
 * encode -> frame_decode with field equality. */
#include <string.h>

#include "common/errors.h"
#include "server/codec/commands.h"
#include "tests/unit/codec/codec_tests.h"
#include "tests/unit/support/test_support.h"

typedef Pulsar__Proto__BaseCommand base_t;

/* Decodes *bp (and drops it), checks its type, returns the frame (caller frees).
 * Takes the pointer's address so it is read after the encoder has run. */
static frame_t rt(qbuf_t **bp, int rc, Pulsar__Proto__BaseCommand__Type type)
{
    frame_t f = {0};
    qbuf_t *b = *bp;
    *bp = NULL;
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0 || !b)
        return f;
    int drc = codec_decode_whole(b, &f);
    CU_ASSERT_EQUAL(drc, 0);
    if (drc == 0)
        CU_ASSERT_EQUAL(f.cmd->type, type);
    qbuf_unref(b);
    return f;
}

static void test_connected(void)
{
    qbuf_t *b = NULL;
    Pulsar__Proto__FeatureFlags ff = PULSAR__PROTO__FEATURE_FLAGS__INIT;
    ff.has_supports_topic_watchers = 1;
    ff.supports_topic_watchers = 1;
    frame_t f = rt(&b, cmd_encode_connected("Quire 0.1", 20, 5242880, &ff, &b),
                   PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECTED);
    TEST_REQUIRE(f.cmd && f.cmd->connected);
    CU_ASSERT_STRING_EQUAL(f.cmd->connected->server_version, "Quire 0.1");
    CU_ASSERT_EQUAL(f.cmd->connected->protocol_version, 20);
    CU_ASSERT_TRUE(f.cmd->connected->has_max_message_size);
    CU_ASSERT_EQUAL(f.cmd->connected->max_message_size, 5242880);
    TEST_REQUIRE(f.cmd->connected->feature_flags != NULL);
    CU_ASSERT_TRUE(f.cmd->connected->feature_flags->supports_topic_watchers);
    CU_ASSERT_FALSE(f.cmd->connected->feature_flags->supports_auth_refresh);
    frame_free(&f);
    f = rt(&b, cmd_encode_connected("Q", 15, 0, NULL, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECTED);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_FALSE(f.cmd->connected->has_max_message_size);
    CU_ASSERT_PTR_NULL(f.cmd->connected->feature_flags);
    frame_free(&f);
    CU_ASSERT_EQUAL(cmd_encode_connected(NULL, 20, 0, NULL, &b), QE_INVALID);
}

static void test_producer_success(void)
{
    qbuf_t *b = NULL;
    const uint8_t ver[8] = {0, 0, 0, 0, 0, 0, 0, 3};
    frame_t f = rt(&b, cmd_encode_producer_success(9, "standalone-0-1", 41, ver, 8, -1, true, &b),
                   PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS);
    TEST_REQUIRE(f.cmd && f.cmd->producer_success);
    Pulsar__Proto__CommandProducerSuccess *s = f.cmd->producer_success;
    CU_ASSERT_EQUAL(s->request_id, 9);
    CU_ASSERT_STRING_EQUAL(s->producer_name, "standalone-0-1");
    CU_ASSERT_EQUAL(s->last_sequence_id, 41);
    CU_ASSERT_TRUE(s->has_schema_version);
    CU_ASSERT_EQUAL(s->schema_version.len, 8);
    CU_ASSERT_EQUAL(memcmp(s->schema_version.data, ver, 8), 0);
    CU_ASSERT_FALSE(s->has_topic_epoch);
    CU_ASSERT_TRUE(s->producer_ready);
    frame_free(&f);
    f = rt(&b, cmd_encode_producer_success(10, "p", -1, NULL, 0, 4, false, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__PRODUCER_SUCCESS);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(f.cmd->producer_success->last_sequence_id, -1);
    CU_ASSERT_TRUE(f.cmd->producer_success->has_topic_epoch);
    CU_ASSERT_EQUAL(f.cmd->producer_success->topic_epoch, 4);
    CU_ASSERT_FALSE(f.cmd->producer_success->producer_ready);
    CU_ASSERT_FALSE(f.cmd->producer_success->has_schema_version);
    frame_free(&f);
}

static void test_send_receipt_and_error(void)
{
    qbuf_t *b = NULL;
    cmd_message_id_t id = {.ledger_id = 12, .entry_id = 345, .partition = 3, .batch_index = -1};
    frame_t f = rt(&b, cmd_encode_send_receipt(1, 100, 104, &id, &b),
                   PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT);
    TEST_REQUIRE(f.cmd && f.cmd->send_receipt);
    Pulsar__Proto__CommandSendReceipt *r = f.cmd->send_receipt;
    CU_ASSERT_EQUAL(r->producer_id, 1);
    CU_ASSERT_EQUAL(r->sequence_id, 100);
    CU_ASSERT_EQUAL(r->highest_sequence_id, 104);
    TEST_REQUIRE(r->message_id != NULL);
    CU_ASSERT_EQUAL(r->message_id->ledgerid, 12);
    CU_ASSERT_EQUAL(r->message_id->entryid, 345);
    CU_ASSERT_EQUAL(r->message_id->partition, 3);
    CU_ASSERT_FALSE(r->message_id->has_batch_index);
    CU_ASSERT_EQUAL(r->message_id->batch_index, -1);
    frame_free(&f);
    /* A duplicate's receipt: (-1, -1) survives as int64. */
    cmd_message_id_t dup = {-1, -1, -1, -1};
    f = rt(&b, cmd_encode_send_receipt(1, 7, 7, &dup, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_RECEIPT);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL((int64_t)f.cmd->send_receipt->message_id->ledgerid, -1);
    CU_ASSERT_EQUAL((int64_t)f.cmd->send_receipt->message_id->entryid, -1);
    CU_ASSERT_EQUAL(f.cmd->send_receipt->message_id->partition, -1);
    frame_free(&f);

    f = rt(&b,
           cmd_encode_send_error(2, 5, PULSAR__PROTO__SERVER_ERROR__ChecksumError, "bad crc", &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__SEND_ERROR);
    TEST_REQUIRE(f.cmd && f.cmd->send_error);
    CU_ASSERT_EQUAL(f.cmd->send_error->producer_id, 2);
    CU_ASSERT_EQUAL(f.cmd->send_error->sequence_id, 5);
    CU_ASSERT_EQUAL(f.cmd->send_error->error, PULSAR__PROTO__SERVER_ERROR__ChecksumError);
    CU_ASSERT_STRING_EQUAL(f.cmd->send_error->message, "bad crc");
    frame_free(&f);
}

static void test_success_error_ping_pong(void)
{
    qbuf_t *b = NULL;
    frame_t f =
        rt(&b, cmd_encode_success(77, NULL, &b), PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS);
    TEST_REQUIRE(f.cmd && f.cmd->success);
    CU_ASSERT_EQUAL(f.cmd->success->request_id, 77);
    CU_ASSERT_PTR_NULL(f.cmd->success->schema);
    frame_free(&f);

    f = rt(&b,
           cmd_encode_error(UINT64_MAX, PULSAR__PROTO__SERVER_ERROR__AuthenticationError,
                            "auth failed", &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__ERROR);
    TEST_REQUIRE(f.cmd && f.cmd->error);
    CU_ASSERT_EQUAL(f.cmd->error->request_id, UINT64_MAX);
    CU_ASSERT_EQUAL(f.cmd->error->error, PULSAR__PROTO__SERVER_ERROR__AuthenticationError);
    CU_ASSERT_STRING_EQUAL(f.cmd->error->message, "auth failed");
    frame_free(&f);
    CU_ASSERT_EQUAL(cmd_encode_error(1, 0, NULL, &b), QE_INVALID);

    f = rt(&b, cmd_encode_ping(&b), PULSAR__PROTO__BASE_COMMAND__TYPE__PING);
    CU_ASSERT_PTR_NOT_NULL(f.cmd ? f.cmd->ping : NULL);
    frame_free(&f);
    f = rt(&b, cmd_encode_pong(&b), PULSAR__PROTO__BASE_COMMAND__TYPE__PONG);
    CU_ASSERT_PTR_NOT_NULL(f.cmd ? f.cmd->pong : NULL);
    frame_free(&f);
}

static void test_lookup_and_partitions(void)
{
    qbuf_t *b = NULL;
    frame_t f = rt(&b,
                   cmd_encode_lookup_response(
                       3, PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Connect,
                       "pulsar://localhost:6650", NULL, true, &b),
                   PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP_RESPONSE);
    TEST_REQUIRE(f.cmd && f.cmd->lookuptopicresponse);
    Pulsar__Proto__CommandLookupTopicResponse *r = f.cmd->lookuptopicresponse;
    CU_ASSERT_EQUAL(r->request_id, 3);
    CU_ASSERT_TRUE(r->has_response);
    CU_ASSERT_EQUAL(r->response,
                    PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Connect);
    CU_ASSERT_STRING_EQUAL(r->brokerserviceurl, "pulsar://localhost:6650");
    CU_ASSERT_PTR_NULL(r->brokerserviceurltls);
    CU_ASSERT_TRUE(r->authoritative);
    CU_ASSERT_TRUE(r->has_proxy_through_service_url);
    CU_ASSERT_FALSE(r->proxy_through_service_url);
    frame_free(&f);

    f = rt(&b,
           cmd_encode_lookup_failed(4, PULSAR__PROTO__SERVER_ERROR__TopicNotFound, "no topic", &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__LOOKUP_RESPONSE);
    TEST_REQUIRE(f.cmd != NULL);
    r = f.cmd->lookuptopicresponse;
    CU_ASSERT_EQUAL(r->response, PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Failed);
    CU_ASSERT_TRUE(r->has_error);
    CU_ASSERT_EQUAL(r->error, PULSAR__PROTO__SERVER_ERROR__TopicNotFound);
    CU_ASSERT_STRING_EQUAL(r->message, "no topic");
    frame_free(&f);
    CU_ASSERT_EQUAL(cmd_encode_lookup_response(
                        1, PULSAR__PROTO__COMMAND_LOOKUP_TOPIC_RESPONSE__LOOKUP_TYPE__Failed, "u",
                        NULL, true, &b),
                    QE_INVALID);

    f = rt(&b, cmd_encode_partitioned_metadata_response(5, 4, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA_RESPONSE);
    TEST_REQUIRE(f.cmd && f.cmd->partitionmetadataresponse);
    CU_ASSERT_EQUAL(f.cmd->partitionmetadataresponse->request_id, 5);
    CU_ASSERT_TRUE(f.cmd->partitionmetadataresponse->has_response);
    CU_ASSERT_EQUAL(
        f.cmd->partitionmetadataresponse->response,
        PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__LOOKUP_TYPE__Success);
    CU_ASSERT_TRUE(f.cmd->partitionmetadataresponse->has_partitions);
    CU_ASSERT_EQUAL(f.cmd->partitionmetadataresponse->partitions, 4);
    frame_free(&f);

    f = rt(&b,
           cmd_encode_partitioned_metadata_failed(6, PULSAR__PROTO__SERVER_ERROR__ServiceNotReady,
                                                  "later", &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__PARTITIONED_METADATA_RESPONSE);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(
        f.cmd->partitionmetadataresponse->response,
        PULSAR__PROTO__COMMAND_PARTITIONED_TOPIC_METADATA_RESPONSE__LOOKUP_TYPE__Failed);
    CU_ASSERT_EQUAL(f.cmd->partitionmetadataresponse->error,
                    PULSAR__PROTO__SERVER_ERROR__ServiceNotReady);
    CU_ASSERT_STRING_EQUAL(f.cmd->partitionmetadataresponse->message, "later");
    frame_free(&f);
}

static void test_message(void)
{
    /* A stored slice without checksum: [metaSize][metadata][payload]. */
    Pulsar__Proto__MessageMetadata md = PULSAR__PROTO__MESSAGE_METADATA__INIT;
    md.producer_name = "p";
    md.sequence_id = 1;
    md.publish_time = 2;
    uint8_t stored[64];
    size_t ml = pulsar__proto__message_metadata__pack(&md, stored + 4);
    stored[0] = stored[1] = stored[2] = 0;
    stored[3] = (uint8_t)ml;
    memcpy(stored + 4 + ml, "abc", 3);
    size_t sl = 4 + ml + 3;

    int64_t ack_set[2] = {-1, 0x0f};
    cmd_message_id_t id = {.ledger_id = 3, .entry_id = 4, .partition = 2, .batch_index = -1};
    qbuf_t *b = NULL;
    /* Not through rt(): the frame's payload slice borrows b, kept until the end. */
    TEST_REQUIRE(cmd_encode_message(8, &id, 1, ack_set, 2, stored, sl, &b) == 0);
    frame_t f;
    TEST_REQUIRE(codec_decode_whole(b, &f) == 0);
    CU_ASSERT_EQUAL(f.cmd->type, PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE);
    TEST_REQUIRE(f.cmd->message != NULL);
    Pulsar__Proto__CommandMessage *m = f.cmd->message;
    CU_ASSERT_EQUAL(m->consumer_id, 8);
    CU_ASSERT_EQUAL(m->message_id->ledgerid, 3);
    CU_ASSERT_EQUAL(m->message_id->entryid, 4);
    CU_ASSERT_EQUAL(m->message_id->partition, 2);
    CU_ASSERT_EQUAL(m->redelivery_count, 1);
    TEST_REQUIRE(m->n_ack_set == 2);
    CU_ASSERT_EQUAL(m->ack_set[0], -1);
    CU_ASSERT_EQUAL(m->ack_set[1], 0x0f);
    CU_ASSERT_TRUE(f.has_checksum && f.checksum_ok);
    CU_ASSERT_EQUAL(f.payload_len, sl + 6);
    CU_ASSERT_EQUAL(memcmp(f.payload + 6, stored, sl), 0);
    frame_free(&f);
    qbuf_unref(b);
    b = NULL;
    /* redelivery_count 0 and no ack_set are left out. */
    f = rt(&b, cmd_encode_message(8, &id, 0, NULL, 0, stored, sl, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__MESSAGE);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_FALSE(f.cmd->message->has_redelivery_count);
    CU_ASSERT_EQUAL(f.cmd->message->n_ack_set, 0);
    frame_free(&f);
}

static void test_last_message_id_and_ack_response(void)
{
    qbuf_t *b = NULL;
    cmd_message_id_t last = {.ledger_id = 10, .entry_id = 20, .partition = -1, .batch_index = 4};
    cmd_message_id_t mdp = {.ledger_id = 10, .entry_id = 18, .partition = -1, .batch_index = -1};
    frame_t f = rt(&b, cmd_encode_get_last_message_id_response(12, &last, &mdp, &b),
                   PULSAR__PROTO__BASE_COMMAND__TYPE__GET_LAST_MESSAGE_ID_RESPONSE);
    TEST_REQUIRE(f.cmd && f.cmd->getlastmessageidresponse);
    Pulsar__Proto__CommandGetLastMessageIdResponse *r = f.cmd->getlastmessageidresponse;
    CU_ASSERT_EQUAL(r->request_id, 12);
    CU_ASSERT_EQUAL(r->last_message_id->ledgerid, 10);
    CU_ASSERT_EQUAL(r->last_message_id->entryid, 20);
    CU_ASSERT_EQUAL(r->last_message_id->batch_index, 4);
    CU_ASSERT_EQUAL(r->last_message_id->partition, -1);
    TEST_REQUIRE(r->consumer_mark_delete_position != NULL);
    CU_ASSERT_EQUAL(r->consumer_mark_delete_position->entryid, 18);
    frame_free(&f);

    f = rt(&b, cmd_encode_ack_response(3, 99, CMD_NO_ERROR, NULL, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__ACK_RESPONSE);
    TEST_REQUIRE(f.cmd && f.cmd->ackresponse);
    CU_ASSERT_EQUAL(f.cmd->ackresponse->consumer_id, 3);
    CU_ASSERT_TRUE(f.cmd->ackresponse->has_request_id);
    CU_ASSERT_EQUAL(f.cmd->ackresponse->request_id, 99);
    CU_ASSERT_FALSE(f.cmd->ackresponse->has_error);
    frame_free(&f);
    f = rt(&b,
           cmd_encode_ack_response(3, 100, PULSAR__PROTO__SERVER_ERROR__NotAllowedError, "no", &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__ACK_RESPONSE);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_TRUE(f.cmd->ackresponse->has_error);
    CU_ASSERT_EQUAL(f.cmd->ackresponse->error, PULSAR__PROTO__SERVER_ERROR__NotAllowedError);
    CU_ASSERT_STRING_EQUAL(f.cmd->ackresponse->message, "no");
    frame_free(&f);
}

static void test_close_and_consumer_events(void)
{
    qbuf_t *b = NULL;
    frame_t f = rt(&b, cmd_encode_close_producer(4, 40, "pulsar://b2:6650", NULL, &b),
                   PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_PRODUCER);
    TEST_REQUIRE(f.cmd && f.cmd->close_producer);
    CU_ASSERT_EQUAL(f.cmd->close_producer->producer_id, 4);
    CU_ASSERT_EQUAL(f.cmd->close_producer->request_id, 40);
    CU_ASSERT_STRING_EQUAL(f.cmd->close_producer->assignedbrokerserviceurl, "pulsar://b2:6650");
    CU_ASSERT_PTR_NULL(f.cmd->close_producer->assignedbrokerserviceurltls);
    frame_free(&f);

    f = rt(&b, cmd_encode_close_consumer(5, 50, NULL, NULL, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__CLOSE_CONSUMER);
    TEST_REQUIRE(f.cmd && f.cmd->close_consumer);
    CU_ASSERT_EQUAL(f.cmd->close_consumer->consumer_id, 5);
    CU_ASSERT_EQUAL(f.cmd->close_consumer->request_id, 50);
    CU_ASSERT_PTR_NULL(f.cmd->close_consumer->assignedbrokerserviceurl);
    frame_free(&f);

    f = rt(&b, cmd_encode_active_consumer_change(6, true, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__ACTIVE_CONSUMER_CHANGE);
    TEST_REQUIRE(f.cmd && f.cmd->active_consumer_change);
    CU_ASSERT_EQUAL(f.cmd->active_consumer_change->consumer_id, 6);
    CU_ASSERT_TRUE(f.cmd->active_consumer_change->is_active);
    frame_free(&f);

    f = rt(&b, cmd_encode_reached_end_of_topic(7, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__REACHED_END_OF_TOPIC);
    TEST_REQUIRE(f.cmd && f.cmd->reachedendoftopic);
    CU_ASSERT_EQUAL(f.cmd->reachedendoftopic->consumer_id, 7);
    frame_free(&f);
}

static void test_topics_and_schema(void)
{
    qbuf_t *b = NULL;
    const char *topics[] = {"persistent://public/default/a",
                            "persistent://public/default/b-partition-0"};
    frame_t f =
        rt(&b, cmd_encode_get_topics_of_namespace_response(8, topics, 2, true, "h1", true, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE_RESPONSE);
    TEST_REQUIRE(f.cmd && f.cmd->gettopicsofnamespaceresponse);
    Pulsar__Proto__CommandGetTopicsOfNamespaceResponse *r = f.cmd->gettopicsofnamespaceresponse;
    CU_ASSERT_EQUAL(r->request_id, 8);
    TEST_REQUIRE(r->n_topics == 2);
    CU_ASSERT_STRING_EQUAL(r->topics[0], topics[0]);
    CU_ASSERT_STRING_EQUAL(r->topics[1], topics[1]);
    CU_ASSERT_TRUE(r->filtered);
    CU_ASSERT_STRING_EQUAL(r->topics_hash, "h1");
    CU_ASSERT_TRUE(r->changed);
    frame_free(&f);
    f = rt(&b, cmd_encode_get_topics_of_namespace_response(9, NULL, 0, false, NULL, false, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__GET_TOPICS_OF_NAMESPACE_RESPONSE);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_EQUAL(f.cmd->gettopicsofnamespaceresponse->n_topics, 0);
    CU_ASSERT_FALSE(f.cmd->gettopicsofnamespaceresponse->changed);
    frame_free(&f);

    Pulsar__Proto__Schema schema = PULSAR__PROTO__SCHEMA__INIT;
    schema.name = "s";
    schema.type = PULSAR__PROTO__SCHEMA__TYPE__Json;
    schema.schema_data.data = (uint8_t *)"{\"type\":\"record\"}";
    schema.schema_data.len = 17;
    const uint8_t ver[8] = {0, 0, 0, 0, 0, 0, 0, 1};
    f = rt(&b, cmd_encode_get_schema_response(10, &schema, ver, 8, &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA_RESPONSE);
    TEST_REQUIRE(f.cmd && f.cmd->getschemaresponse && f.cmd->getschemaresponse->schema);
    CU_ASSERT_EQUAL(f.cmd->getschemaresponse->request_id, 10);
    CU_ASSERT_STRING_EQUAL(f.cmd->getschemaresponse->schema->name, "s");
    CU_ASSERT_EQUAL(f.cmd->getschemaresponse->schema->type, PULSAR__PROTO__SCHEMA__TYPE__Json);
    CU_ASSERT_EQUAL(f.cmd->getschemaresponse->schema->schema_data.len, 17);
    CU_ASSERT_EQUAL(memcmp(f.cmd->getschemaresponse->schema_version.data, ver, 8), 0);
    CU_ASSERT_FALSE(f.cmd->getschemaresponse->has_error_code);
    frame_free(&f);

    f = rt(&b,
           cmd_encode_get_schema_error(11, PULSAR__PROTO__SERVER_ERROR__TopicNotFound, "none", &b),
           PULSAR__PROTO__BASE_COMMAND__TYPE__GET_SCHEMA_RESPONSE);
    TEST_REQUIRE(f.cmd != NULL);
    CU_ASSERT_TRUE(f.cmd->getschemaresponse->has_error_code);
    CU_ASSERT_EQUAL(f.cmd->getschemaresponse->error_code,
                    PULSAR__PROTO__SERVER_ERROR__TopicNotFound);
    CU_ASSERT_STRING_EQUAL(f.cmd->getschemaresponse->error_message, "none");
    CU_ASSERT_PTR_NULL(f.cmd->getschemaresponse->schema);
    frame_free(&f);

    /* A schema missing its required name is refused by the encoder. */
    schema.name = NULL;
    CU_ASSERT_EQUAL(cmd_encode_get_schema_response(12, &schema, NULL, 0, &b), QE_INVALID);
    /* SUCCESS may carry a schema. */
    schema.name = "s2";
    f = rt(&b, cmd_encode_success(13, &schema, &b), PULSAR__PROTO__BASE_COMMAND__TYPE__SUCCESS);
    TEST_REQUIRE(f.cmd && f.cmd->success->schema);
    CU_ASSERT_STRING_EQUAL(f.cmd->success->schema->name, "s2");
    frame_free(&f);
}

/* Client-side commands the broker decodes, encoded by hand here. */
static void test_client_commands_decode(void)
{
    Pulsar__Proto__CommandConnect c = PULSAR__PROTO__COMMAND_CONNECT__INIT;
    c.client_version = "Pulsar-CPP-v3.5.0";
    c.has_protocol_version = 1;
    c.protocol_version = 20;
    c.auth_method_name = "token";
    c.has_auth_data = 1;
    c.auth_data.data = (uint8_t *)"jwt";
    c.auth_data.len = 3;
    Pulsar__Proto__FeatureFlags ff = PULSAR__PROTO__FEATURE_FLAGS__INIT;
    ff.has_supports_broker_entry_metadata = 1;
    ff.supports_broker_entry_metadata = 1;
    c.feature_flags = &ff;
    base_t cmd = PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT;
    cmd.connect = &c;
    qbuf_t *b = NULL;
    frame_t f = rt(&b, frame_encode_command(&cmd, &b), PULSAR__PROTO__BASE_COMMAND__TYPE__CONNECT);
    TEST_REQUIRE(f.cmd && f.cmd->connect);
    CU_ASSERT_STRING_EQUAL(f.cmd->connect->client_version, "Pulsar-CPP-v3.5.0");
    CU_ASSERT_EQUAL(f.cmd->connect->protocol_version, 20);
    CU_ASSERT_STRING_EQUAL(f.cmd->connect->auth_method_name, "token");
    CU_ASSERT_EQUAL(f.cmd->connect->auth_data.len, 3);
    CU_ASSERT_TRUE(f.cmd->connect->feature_flags->supports_broker_entry_metadata);
    frame_free(&f);

    Pulsar__Proto__CommandSubscribe s = PULSAR__PROTO__COMMAND_SUBSCRIBE__INIT;
    s.topic = "persistent://public/default/t";
    s.subscription = "sub";
    s.subtype = PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared;
    s.consumer_id = 1;
    s.request_id = 2;
    Pulsar__Proto__KeySharedMeta ks = PULSAR__PROTO__KEY_SHARED_META__INIT;
    ks.keysharedmode = PULSAR__PROTO__KEY_SHARED_MODE__STICKY;
    Pulsar__Proto__IntRange r1 = PULSAR__PROTO__INT_RANGE__INIT;
    r1.start = 0;
    r1.end = 32767;
    Pulsar__Proto__IntRange *ranges[] = {&r1};
    ks.n_hashranges = 1;
    ks.hashranges = ranges;
    s.keysharedmeta = &ks;
    Pulsar__Proto__MessageIdData start = PULSAR__PROTO__MESSAGE_ID_DATA__INIT;
    start.ledgerid = (uint64_t)INT64_MAX;
    start.entryid = (uint64_t)INT64_MAX;
    s.start_message_id = &start;
    cmd = (base_t)PULSAR__PROTO__BASE_COMMAND__INIT;
    cmd.type = PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE;
    cmd.subscribe = &s;
    f = rt(&b, frame_encode_command(&cmd, &b), PULSAR__PROTO__BASE_COMMAND__TYPE__SUBSCRIBE);
    TEST_REQUIRE(f.cmd && f.cmd->subscribe);
    CU_ASSERT_STRING_EQUAL(f.cmd->subscribe->subscription, "sub");
    CU_ASSERT_TRUE(f.cmd->subscribe->durable); /* default true */
    CU_ASSERT_EQUAL(f.cmd->subscribe->initialposition,
                    PULSAR__PROTO__COMMAND_SUBSCRIBE__INITIAL_POSITION__Latest);
    CU_ASSERT_EQUAL(f.cmd->subscribe->keysharedmeta->n_hashranges, 1);
    CU_ASSERT_EQUAL(f.cmd->subscribe->keysharedmeta->hashranges[0]->end, 32767);
    CU_ASSERT_EQUAL((int64_t)f.cmd->subscribe->start_message_id->ledgerid, INT64_MAX);
    frame_free(&f);
}

void codec_register_commands(void)
{
    CU_pSuite s = CU_add_suite("commands", NULL, NULL);
    CU_add_test(s, "connected", test_connected);
    CU_add_test(s, "producer_success", test_producer_success);
    CU_add_test(s, "send_receipt, send_error", test_send_receipt_and_error);
    CU_add_test(s, "success, error, ping, pong", test_success_error_ping_pong);
    CU_add_test(s, "lookup, partitioned metadata", test_lookup_and_partitions);
    CU_add_test(s, "message", test_message);
    CU_add_test(s, "last message id, ack response", test_last_message_id_and_ack_response);
    CU_add_test(s, "close producer/consumer, consumer events", test_close_and_consumer_events);
    CU_add_test(s, "topics of namespace, schema", test_topics_and_schema);
    CU_add_test(s, "client commands decode", test_client_commands_decode);
}
