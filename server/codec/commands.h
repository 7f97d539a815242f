/*
 * commands.h — builders for the commands the broker sends, each producing one
 * encoded frame (frame.h) in a new qbuf_t.
 *
 * Every builder fills the command's required fields from its arguments and
 * sets only the optional fields that clients need (PROTOCOL-NOTES.md says
 * which). Strings and byte arrays are borrowed for the call only: the output
 * buffer holds its own encoded copy. On success *out is a new buffer with one
 * reference, owned by the caller; on failure *out is untouched and the
 * return is QE_INVALID (NULL where a string is required, bad argument),
 * QE_TOO_LARGE, or -ENOMEM.
 *
 * Message ids: ledger and entry ids are int64 in Quire (-1 = none, as clients
 * use them) and are written into Pulsar's uint64 fields bit for bit.
 */
#ifndef QUIRE_SERVER_CODEC_COMMANDS_H
#define QUIRE_SERVER_CODEC_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "PulsarApi.pb-c.h"
#include "common/buf.h"

/* A message id as the broker knows it. partition < 0 and batch_index < 0 are
 * left out of the encoding (clients read the absence as -1). */
typedef struct cmd_message_id {
    int64_t ledger_id;
    int64_t entry_id;
    int32_t partition;
    int32_t batch_index;
} cmd_message_id_t;

/* "No ServerError": pass as server_error where an error is optional. */
#define CMD_NO_ERROR (-1)

/* CONNECTED {server_version, protocol_version, max_message_size, feature_flags}.
 * flags may be NULL (no feature flags); it is borrowed. */
int cmd_encode_connected(const char *server_version, int32_t protocol_version,
                         int32_t max_message_size, const Pulsar__Proto__FeatureFlags *flags,
                         qbuf_t **out);

/* PRODUCER_SUCCESS. schema_version may be NULL; topic_epoch < 0 = absent. */
int cmd_encode_producer_success(uint64_t request_id, const char *producer_name,
                                int64_t last_sequence_id, const uint8_t *schema_version,
                                size_t schema_version_len, int64_t topic_epoch, bool producer_ready,
                                qbuf_t **out);

/* SEND_RECEIPT {producer_id, sequence_id, highest_sequence_id, message_id}. */
int cmd_encode_send_receipt(uint64_t producer_id, uint64_t sequence_id,
                            uint64_t highest_sequence_id, const cmd_message_id_t *id, qbuf_t **out);

/* SEND_ERROR {producer_id, sequence_id, error, message}. */
int cmd_encode_send_error(uint64_t producer_id, uint64_t sequence_id,
                          Pulsar__Proto__ServerError error, const char *message, qbuf_t **out);

/* SUCCESS {request_id}; schema (borrowed) may be NULL. */
int cmd_encode_success(uint64_t request_id, const Pulsar__Proto__Schema *schema, qbuf_t **out);

/* ERROR {request_id, error, message}. For a failed handshake request_id is
 * (uint64_t)-1. */
int cmd_encode_error(uint64_t request_id, Pulsar__Proto__ServerError error, const char *message,
                     qbuf_t **out);

int cmd_encode_ping(qbuf_t **out);
int cmd_encode_pong(qbuf_t **out);

/* LOOKUP_RESPONSE, Connect or Redirect: broker_url (required) and
 * broker_url_tls (may be NULL); proxy_through_service_url = false. */
int cmd_encode_lookup_response(uint64_t request_id,
                               Pulsar__Proto__CommandLookupTopicResponse__LookupType type,
                               const char *broker_url, const char *broker_url_tls,
                               bool authoritative, qbuf_t **out);
/* LOOKUP_RESPONSE, Failed {error, message}. */
int cmd_encode_lookup_failed(uint64_t request_id, Pulsar__Proto__ServerError error,
                             const char *message, qbuf_t **out);

/* PARTITIONED_METADATA_RESPONSE {response = Success, partitions}. */
int cmd_encode_partitioned_metadata_response(uint64_t request_id, uint32_t partitions,
                                             qbuf_t **out);
/* PARTITIONED_METADATA_RESPONSE {response = Failed, error, message}. */
int cmd_encode_partitioned_metadata_failed(uint64_t request_id, Pulsar__Proto__ServerError error,
                                           const char *message, qbuf_t **out);

/* The MESSAGE command itself (no payload), filled into caller storage: cmd and
 * msg and idd must outlive their use; ack_set is borrowed (may be NULL). Used
 * by the two MESSAGE encoders below and by callers that keep a template. */
void cmd_fill_message(Pulsar__Proto__BaseCommand *cmd, Pulsar__Proto__CommandMessage *msg,
                      Pulsar__Proto__MessageIdData *idd, uint64_t consumer_id,
                      const cmd_message_id_t *id, uint32_t redelivery_count, const int64_t *ack_set,
                      size_t n_ack_set);

/* MESSAGE header for the zero-copy path: hdr then stored form one frame (see
 * frame_encode_message_header; a checksum is added when stored has none).
 * bem (packed BrokerEntryMetadata) may be NULL. */
int cmd_encode_message_header(uint64_t consumer_id, const cmd_message_id_t *id,
                              uint32_t redelivery_count, const int64_t *ack_set, size_t n_ack_set,
                              const uint8_t *bem, size_t bem_len, const uint8_t *stored,
                              size_t stored_len, uint8_t *hdr, size_t hdr_cap, size_t *hdr_len);
/* The same as one buffer (copies stored). */
int cmd_encode_message(uint64_t consumer_id, const cmd_message_id_t *id, uint32_t redelivery_count,
                       const int64_t *ack_set, size_t n_ack_set, const uint8_t *stored,
                       size_t stored_len, qbuf_t **out);

/* GET_LAST_MESSAGE_ID_RESPONSE; mark_delete may be NULL (but clients want it). */
int cmd_encode_get_last_message_id_response(uint64_t request_id, const cmd_message_id_t *last,
                                            const cmd_message_id_t *mark_delete, qbuf_t **out);

/* ACK_RESPONSE {consumer_id, request_id, error?, message?}; server_error =
 * CMD_NO_ERROR for success; message may be NULL. */
int cmd_encode_ack_response(uint64_t consumer_id, uint64_t request_id, int server_error,
                            const char *message, qbuf_t **out);

/* CLOSE_PRODUCER / CLOSE_CONSUMER from the broker; the assigned URLs (may be
 * NULL) tell the client where the topic went. */
int cmd_encode_close_producer(uint64_t producer_id, uint64_t request_id, const char *assigned_url,
                              const char *assigned_url_tls, qbuf_t **out);
int cmd_encode_close_consumer(uint64_t consumer_id, uint64_t request_id, const char *assigned_url,
                              const char *assigned_url_tls, qbuf_t **out);

/* ACTIVE_CONSUMER_CHANGE {consumer_id, is_active}. */
int cmd_encode_active_consumer_change(uint64_t consumer_id, bool is_active, qbuf_t **out);

/* GET_TOPICS_OF_NAMESPACE_RESPONSE; topics (n strings, borrowed) may be NULL
 * when n is 0; topics_hash may be NULL. */
int cmd_encode_get_topics_of_namespace_response(uint64_t request_id, const char *const *topics,
                                                size_t n, bool filtered, const char *topics_hash,
                                                bool changed, qbuf_t **out);

/* REACHED_END_OF_TOPIC {consumer_id}: Java clients only (PROTOCOL-NOTES.md). */
int cmd_encode_reached_end_of_topic(uint64_t consumer_id, qbuf_t **out);

/* GET_SCHEMA_RESPONSE with a schema (borrowed) and its version bytes. */
int cmd_encode_get_schema_response(uint64_t request_id, const Pulsar__Proto__Schema *schema,
                                   const uint8_t *schema_version, size_t schema_version_len,
                                   qbuf_t **out);
/* GET_SCHEMA_RESPONSE {error_code, error_message}. */
int cmd_encode_get_schema_error(uint64_t request_id, Pulsar__Proto__ServerError error,
                                const char *message, qbuf_t **out);

#endif
