/*
 * quire_perf_opts.c — quire-perf's command line: options with their bounds,
 * the service URL, and the topic list (given, or made from a prefix), every
 * topic canonicalised as a Pulsar client does ("t" -> persistent://public/default/t).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "server/codec/topic_name.h"
#include "tools/quire_perf.h"

/* ------------------------------------------------------------ value parsers */

int perf_parse_url(const char *url, char *host, size_t host_len, uint16_t *port)
{
    const char *scheme = "pulsar://";
    if (!url || strncmp(url, scheme, strlen(scheme)) != 0)
        return QE_INVALID;
    const char *h = url + strlen(scheme);
    const char *end = h + strcspn(h, "/");
    const char *colon = NULL;
    if (*h == '[') { /* [v6]:port */
        const char *rb = memchr(h, ']', (size_t)(end - h));
        if (!rb)
            return QE_INVALID;
        colon = (rb + 1 < end && rb[1] == ':') ? rb + 1 : NULL;
        if (rb + 1 != end && !colon)
            return QE_INVALID;
        size_t n = (size_t)(rb - h - 1);
        if (n == 0 || n >= host_len)
            return QE_INVALID;
        memcpy(host, h + 1, n);
        host[n] = '\0';
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        const char *hend = colon ? colon : end;
        size_t n = (size_t)(hend - h);
        if (n == 0 || n >= host_len)
            return QE_INVALID;
        memcpy(host, h, n);
        host[n] = '\0';
    }
    if (*end == '/' && end[1] != '\0')
        return QE_INVALID;
    *port = 6650;
    if (colon) {
        char *e = NULL;
        errno = 0;
        long p = strtol(colon + 1, &e, 10);
        if (errno || e == colon + 1 || e != end || p <= 0 || p > 65535)
            return QE_INVALID;
        *port = (uint16_t)p;
    }
    return 0;
}

int perf_parse_sub_type(const char *s, Pulsar__Proto__CommandSubscribe__SubType *out)
{
    static const struct {
        const char *name;
        Pulsar__Proto__CommandSubscribe__SubType t;
    } map[] = {
        {"Exclusive", PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Exclusive},
        {"Shared", PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Shared},
        {"Failover", PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Failover},
        {"Key_Shared", PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Key_Shared},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcasecmp(s, map[i].name) == 0) {
            *out = map[i].t;
            return 0;
        }
    }
    return QE_INVALID;
}

static const char *const compression_names[] = {"NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"};

int perf_parse_compression(const char *s, Pulsar__Proto__CompressionType *out)
{
    for (int i = 0; i < 5; i++) {
        if (strcasecmp(s, compression_names[i]) == 0) {
            *out = (Pulsar__Proto__CompressionType)i;
            return 0;
        }
    }
    return QE_INVALID;
}

const char *perf_compression_name(Pulsar__Proto__CompressionType c)
{
    return (unsigned)c < 5 ? compression_names[c] : "?";
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *e = NULL;
    errno = 0;
    if (!s || *s == '-' || *s == '\0')
        return QE_INVALID;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || *e != '\0' || v < lo || v > hi)
        return QE_INVALID;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *e = NULL;
    errno = 0;
    if (!s || *s == '\0')
        return QE_INVALID;
    double v = strtod(s, &e);
    if (errno || *e != '\0' || !(v >= lo && v <= hi))
        return QE_INVALID;
    *out = v;
    return 0;
}

/* ------------------------------------------------------------ topics */

static int add_topic(perf_opts_t *o, const char *name)
{
    topic_name_t *tn = malloc(sizeof *tn);
    if (!tn)
        return -ENOMEM;
    int rc = topic_name_parse(name, tn);
    if (rc == 0 && o->n_topics >= PERF_MAX_TOPICS)
        rc = QE_TOO_LARGE;
    char *copy = rc == 0 ? strdup(tn->full) : NULL;
    free(tn);
    if (rc != 0)
        return rc;
    if (!copy)
        return -ENOMEM;
    o->topics[o->n_topics++] = copy;
    return 0;
}

static int add_topic_list(perf_opts_t *o, const char *list)
{
    char *dup = strdup(list);
    if (!dup)
        return -ENOMEM;
    int rc = 0;
    char *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save))
        rc = add_topic(o, t);
    free(dup);
    return rc;
}

/* ------------------------------------------------------------ the parser */

void perf_usage(FILE *f)
{
    fputs("usage: quire-perf produce|consume|both [options]\n"
          "  --service-url URL          pulsar://host:port (default pulsar://localhost:6650)\n"
          "  --topics T1,T2             topics (default perf-topic)\n"
          "  --topic-prefix P --num-topics N   topics P-0 .. P-(N-1)\n"
          "  --partitions / --no-partitions    ask PARTITIONED_METADATA and use every\n"
          "                             partition (default on)\n"
          "  --producers-per-topic N    (default 1)\n"
          "  --consumers-per-topic N    (default 1)\n"
          "  --subscription NAME        (default quire-perf-sub)\n"
          "  --subscription-type T      Exclusive|Shared|Failover|Key_Shared (default Exclusive)\n"
          "  --subscription-position P  Latest|Earliest, for a new subscription (default Latest)\n"
          "  --size BYTES               message size (default 1024)\n"
          "  --rate MSG/S               total over all producers, 0 = max (default 100)\n"
          "  --batch-max-delay-ms MS    (default 1)\n"
          "  --batch-max-messages N     1 = no batching (default 1000)\n"
          "  --batch-max-bytes B        (default 131072)\n"
          "  --disable-batching         same as --batch-max-messages 1\n"
          "  --batcher default|key-based  key-based: a batch holds one key, named in its\n"
          "                             metadata (Pulsar's KEY_BASED, for Key_Shared)\n"
          "  --compression C            NONE|LZ4|ZLIB|ZSTD|SNAPPY (default NONE)\n"
          "  --max-pending N            messages in flight per producer (default 1000)\n"
          "  --receiver-queue-size N    consumer permits (default 1000)\n"
          "  --ack individual|cumulative (default individual)\n"
          "  --seconds S                measured duration after warm-up, 0 = until ^C\n"
          "  --messages N               messages to produce (consume in consume mode)\n"
          "  --messages-per-producer N  each producer stops after N (the run after all)\n"
          "  --warmup-seconds S         (default 1)\n"
          "  --keys N                   keyed messages over N distinct keys (default 0)\n"
          "  --report-interval-s S      (default 5)\n"
          "  --json FILE                write the final report as JSON\n"
          "  --op-timeout-s S           bound on connect/lookup/create/close (default 30)\n"
          "  --max-connections N        share N connections per broker among all producers\n"
          "                             and consumers, as a Pulsar client does; 0 = one\n"
          "                             connection per producer/consumer (default 0)\n"
          "  --host-witness             a thread that only sleeps 1 ms at a time: how late\n"
          "                             it wakes is the machine's, not the load's\n",
          f);
}

enum {
    OPT_URL = 256,
    OPT_TOPICS,
    OPT_PREFIX,
    OPT_NUM_TOPICS,
    OPT_PARTITIONS,
    OPT_NO_PARTITIONS,
    OPT_PPT,
    OPT_CPT,
    OPT_SUB,
    OPT_SUB_TYPE,
    OPT_SUB_POS,
    OPT_SIZE,
    OPT_RATE,
    OPT_BDELAY,
    OPT_BMSGS,
    OPT_BBYTES,
    OPT_NOBATCH,
    OPT_BATCHER,
    OPT_COMPRESSION,
    OPT_PENDING,
    OPT_RQ,
    OPT_ACK,
    OPT_SECONDS,
    OPT_MESSAGES,
    OPT_MSGS_PER_PRODUCER,
    OPT_WARMUP,
    OPT_KEYS,
    OPT_INTERVAL,
    OPT_JSON,
    OPT_OPTIMEOUT,
    OPT_MAXCONN,
    OPT_WITNESS,
    OPT_HELP,
};

static const struct option long_opts[] = {
    {"service-url", required_argument, 0, OPT_URL},
    {"topics", required_argument, 0, OPT_TOPICS},
    {"topic", required_argument, 0, OPT_TOPICS},
    {"topic-prefix", required_argument, 0, OPT_PREFIX},
    {"num-topics", required_argument, 0, OPT_NUM_TOPICS},
    {"partitions", no_argument, 0, OPT_PARTITIONS},
    {"no-partitions", no_argument, 0, OPT_NO_PARTITIONS},
    {"producers-per-topic", required_argument, 0, OPT_PPT},
    {"consumers-per-topic", required_argument, 0, OPT_CPT},
    {"subscription", required_argument, 0, OPT_SUB},
    {"subscription-type", required_argument, 0, OPT_SUB_TYPE},
    {"subscription-position", required_argument, 0, OPT_SUB_POS},
    {"size", required_argument, 0, OPT_SIZE},
    {"rate", required_argument, 0, OPT_RATE},
    {"batch-max-delay-ms", required_argument, 0, OPT_BDELAY},
    {"batch-max-messages", required_argument, 0, OPT_BMSGS},
    {"batch-max-bytes", required_argument, 0, OPT_BBYTES},
    {"disable-batching", no_argument, 0, OPT_NOBATCH},
    {"batcher", required_argument, 0, OPT_BATCHER},
    {"compression", required_argument, 0, OPT_COMPRESSION},
    {"max-pending", required_argument, 0, OPT_PENDING},
    {"receiver-queue-size", required_argument, 0, OPT_RQ},
    {"ack", required_argument, 0, OPT_ACK},
    {"seconds", required_argument, 0, OPT_SECONDS},
    {"messages", required_argument, 0, OPT_MESSAGES},
    {"messages-per-producer", required_argument, 0, OPT_MSGS_PER_PRODUCER},
    {"warmup-seconds", required_argument, 0, OPT_WARMUP},
    {"keys", required_argument, 0, OPT_KEYS},
    {"report-interval-s", required_argument, 0, OPT_INTERVAL},
    {"json", required_argument, 0, OPT_JSON},
    {"op-timeout-s", required_argument, 0, OPT_OPTIMEOUT},
    {"max-connections", required_argument, 0, OPT_MAXCONN},
    {"connections-per-broker", required_argument, 0, OPT_MAXCONN},
    {"host-witness", no_argument, 0, OPT_WITNESS},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

static void opts_defaults(perf_opts_t *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->service_url, sizeof o->service_url, "pulsar://localhost:6650");
    o->partitions = true;
    o->producers_per_topic = 1;
    o->consumers_per_topic = 1;
    snprintf(o->subscription, sizeof o->subscription, "quire-perf-sub");
    o->sub_type = PULSAR__PROTO__COMMAND_SUBSCRIBE__SUB_TYPE__Exclusive;
    o->size_bytes = 1024;
    o->rate = 100;
    o->batch_max_delay_ms = 1;
    o->batch_max_messages = 1000;
    o->batch_max_bytes = 128 * 1024;
    o->compression = PULSAR__PROTO__COMPRESSION_TYPE__NONE;
    o->max_pending = 1000;
    o->warmup_seconds = 1;
    o->report_interval_s = 5;
    o->receiver_queue_size = 1000;
    o->ack_type = PERF_ACK_INDIVIDUAL;
    o->op_timeout_s = 30;
}

static int fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return QE_INVALID;
}

/* One option's value into o; QE_INVALID if the value is out of bounds. */
static int opts_apply(perf_opts_t *o, int c, const char *v, const char **prefix,
                      uint64_t *num_topics, const char **topics)
{
    uint64_t u = 0;
    int rc = 0;
    switch (c) {
    case OPT_URL:
        if (strlen(v) >= sizeof o->service_url)
            return QE_INVALID;
        snprintf(o->service_url, sizeof o->service_url, "%s", v);
        return 0;
    case OPT_TOPICS:
        *topics = v;
        return 0;
    case OPT_PREFIX:
        *prefix = v;
        return 0;
    case OPT_NUM_TOPICS:
        return parse_u64(v, 1, PERF_MAX_TOPICS, num_topics);
    case OPT_PARTITIONS:
        o->partitions = true;
        return 0;
    case OPT_NO_PARTITIONS:
        o->partitions = false;
        return 0;
    case OPT_PPT:
        rc = parse_u64(v, 0, PERF_MAX_PER_TOPIC, &u);
        o->producers_per_topic = (uint32_t)u;
        return rc;
    case OPT_CPT:
        rc = parse_u64(v, 0, PERF_MAX_PER_TOPIC, &u);
        o->consumers_per_topic = (uint32_t)u;
        return rc;
    case OPT_SUB:
        if (!*v || strlen(v) >= sizeof o->subscription)
            return QE_INVALID;
        snprintf(o->subscription, sizeof o->subscription, "%s", v);
        return 0;
    case OPT_SUB_TYPE:
        return perf_parse_sub_type(v, &o->sub_type);
    case OPT_SUB_POS:
        if (strcasecmp(v, "Latest") == 0)
            o->sub_earliest = false;
        else if (strcasecmp(v, "Earliest") == 0)
            o->sub_earliest = true;
        else
            return QE_INVALID;
        return 0;
    case OPT_SIZE:
        rc = parse_u64(v, 1, PERF_MAX_SIZE_BYTES, &u);
        o->size_bytes = (uint32_t)u;
        return rc;
    case OPT_RATE:
        return parse_double(v, 0, 1e9, &o->rate);
    case OPT_BDELAY:
        return parse_double(v, 0, 60000, &o->batch_max_delay_ms);
    case OPT_BMSGS:
        rc = parse_u64(v, 1, PERF_MAX_BATCH_MESSAGES, &u);
        o->batch_max_messages = (uint32_t)u;
        return rc;
    case OPT_BBYTES:
        rc = parse_u64(v, 1, PERF_MAX_SIZE_BYTES, &u);
        o->batch_max_bytes = (uint32_t)u;
        return rc;
    case OPT_NOBATCH:
        o->batch_max_messages = 1;
        return 0;
    case OPT_BATCHER:
        if (strcmp(v, "default") != 0 && strcmp(v, "key-based") != 0)
            return QE_INVALID;
        o->key_based = strcmp(v, "key-based") == 0;
        return 0;
    case OPT_COMPRESSION:
        return perf_parse_compression(v, &o->compression);
    case OPT_PENDING:
        rc = parse_u64(v, 1, PERF_MAX_PENDING, &u);
        o->max_pending = (uint32_t)u;
        return rc;
    case OPT_RQ:
        rc = parse_u64(v, 2, 1000000, &u);
        o->receiver_queue_size = (uint32_t)u;
        return rc;
    case OPT_ACK:
        if (strcasecmp(v, "individual") == 0)
            o->ack_type = PERF_ACK_INDIVIDUAL;
        else if (strcasecmp(v, "cumulative") == 0)
            o->ack_type = PERF_ACK_CUMULATIVE;
        else
            return QE_INVALID;
        return 0;
    case OPT_SECONDS:
        return parse_double(v, 0, 365.0 * 86400, &o->seconds);
    case OPT_MESSAGES:
        return parse_u64(v, 0, UINT64_MAX / 2, &o->messages);
    case OPT_MSGS_PER_PRODUCER:
        return parse_u64(v, 1, UINT64_MAX / 2 / PERF_MAX_ENDPOINTS, &o->messages_per_producer);
    case OPT_WARMUP:
        return parse_double(v, 0, 3600, &o->warmup_seconds);
    case OPT_KEYS:
        rc = parse_u64(v, 0, 100000000, &u);
        o->keys = (uint32_t)u;
        return rc;
    case OPT_INTERVAL:
        return parse_double(v, 0.1, 3600, &o->report_interval_s);
    case OPT_JSON:
        free(o->json_path);
        o->json_path = strdup(v);
        return o->json_path ? 0 : -ENOMEM;
    case OPT_OPTIMEOUT:
        return parse_double(v, 0.1, 3600, &o->op_timeout_s);
    case OPT_MAXCONN:
        rc = parse_u64(v, 0, PERF_MAX_CONNECTIONS, &u);
        o->max_connections = (uint32_t)u;
        return rc;
    case OPT_WITNESS:
        o->host_witness = true;
        return 0;
    default:
        return QE_INVALID;
    }
}

static int opts_topics(perf_opts_t *o, const char *topics, const char *prefix, uint64_t num,
                       char *err, size_t err_len)
{
    o->topics = calloc(PERF_MAX_TOPICS, sizeof *o->topics);
    if (!o->topics)
        return -ENOMEM;
    if (topics && prefix)
        return fail(err, err_len, "--topics and --topic-prefix exclude each other");
    int rc = 0;
    if (prefix) {
        if (num == 0)
            num = 1;
        char name[TOPIC_NAME_MAX + 32];
        for (uint64_t i = 0; i < num && rc == 0; i++) {
            snprintf(name, sizeof name, "%s-%llu", prefix, (unsigned long long)i);
            rc = add_topic(o, name);
        }
    } else {
        rc = add_topic_list(o, topics ? topics : "perf-topic");
    }
    if (rc == 0 && o->n_topics == 0)
        rc = QE_INVALID;
    if (rc != 0)
        return fail(err, err_len, "invalid topic list (%s)", q_strerror(rc));
    return 0;
}

int perf_opts_parse(int argc, char **argv, perf_opts_t *o, char *err, size_t err_len)
{
    opts_defaults(o);
    if (argc < 2)
        return fail(err, err_len, "missing mode: produce, consume or both");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return 1;
    if (strcmp(argv[1], "produce") == 0)
        o->mode = PERF_MODE_PRODUCE;
    else if (strcmp(argv[1], "consume") == 0)
        o->mode = PERF_MODE_CONSUME;
    else if (strcmp(argv[1], "both") == 0)
        o->mode = PERF_MODE_BOTH;
    else
        return fail(err, err_len, "unknown mode '%s': produce, consume or both", argv[1]);

    const char *prefix = NULL, *topics = NULL;
    uint64_t num_topics = 0;
    optind = 2;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP)
            return 1;
        if (c == '?' || c == ':')
            return fail(err, err_len, "unknown option or missing value: %s",
                        argv[optind - 1] ? argv[optind - 1] : "?");
        int rc = opts_apply(o, c, optarg, &prefix, &num_topics, &topics);
        if (rc != 0) {
            const char *name = "?";
            for (const struct option *lo = long_opts; lo->name; lo++)
                if (lo->val == c)
                    name = lo->name;
            return fail(err, err_len, "invalid value for --%s: '%s'", name, optarg ? optarg : "");
        }
    }
    if (optind < argc)
        return fail(err, err_len, "unexpected argument '%s'", argv[optind]);

    char host[PERF_MAX_URL];
    uint16_t port;
    if (perf_parse_url(o->service_url, host, sizeof host, &port) != 0)
        return fail(err, err_len, "invalid --service-url '%s' (want pulsar://host:port)",
                    o->service_url);
    int rc = opts_topics(o, topics, prefix, num_topics, err, err_len);
    if (rc != 0)
        return rc;
    if ((o->mode & PERF_MODE_PRODUCE) && o->producers_per_topic == 0)
        return fail(err, err_len, "--producers-per-topic must be at least 1");
    if ((o->mode & PERF_MODE_CONSUME) && o->consumers_per_topic == 0)
        return fail(err, err_len, "--consumers-per-topic must be at least 1");
    uint64_t eps = 0;
    if (o->mode & PERF_MODE_PRODUCE)
        eps += (uint64_t)o->n_topics * o->producers_per_topic;
    if (o->mode & PERF_MODE_CONSUME)
        eps += (uint64_t)o->n_topics * o->consumers_per_topic;
    if (eps > PERF_MAX_ENDPOINTS)
        return fail(err, err_len, "too many producers+consumers (%llu > %d)",
                    (unsigned long long)eps, PERF_MAX_ENDPOINTS);
    if (o->batch_max_bytes < o->size_bytes && o->batch_max_messages > 1)
        o->batch_max_bytes = o->size_bytes;
    return 0;
}

void perf_opts_free(perf_opts_t *o)
{
    if (o->topics) {
        for (size_t i = 0; i < o->n_topics; i++)
            free(o->topics[i]);
        free(o->topics);
    }
    free(o->json_path);
    o->topics = NULL;
    o->json_path = NULL;
    o->n_topics = 0;
}
