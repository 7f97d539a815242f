"""The schema registry with the stock Python client (pulsar.schema: AvroSchema,
JsonSchema, StringSchema with Record classes) and the REST resource
/admin/v2/schemas/...: typed produce/consume, versions, compatibility
strategies (namespace policy set through REST), refusals with IncompatibleSchema
and the broker's reason (which strategy, which stored version, which field),
partitions sharing their topic's schema, persistence across a restart.

The Python client (C++ underneath) raises IncompatibleSchema with a fixed text
("Pulsar error: IncompatibleSchema"): it drops the server's error message from
the exception and writes it to the client's log instead ("Received error
response from server: IncompatibleSchema (<reason>)"). So the reason is read
from a logger given to pulsar.Client; the Java client puts it in the exception
(test_java_schema.py).

Needs fastavro (pulsar.schema's Avro support): scripts/deps.sh --test installs it."""
import io
import json
import logging
import time
import urllib.parse
import uuid

import pytest

import pulsar
from compat_helpers import http, http_json, unique

pytest.importorskip("fastavro", reason="pulsar.schema.AvroSchema needs fastavro")
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String, StringSchema  # noqa: E402

IncompatibleSchema = pulsar.exceptions.IncompatibleSchema
RECEIVE_MS = 10000


# ------------------------------------------------------------------ records --
# The same record name ("User") in three shapes: Avro checks names match.

def _user_v1():
    class User(Record):
        name = String()
        age = Integer()
    return User


def _user_v2():  # + an optional field with a default: FULL-compatible with v1
    class User(Record):
        name = String()
        age = Integer()
        email = String(required_default=True)
    return User


def _user_bad():  # a required field v1 does not have: neither way compatible
    class User(Record):
        name = String()
        age = Integer()
        score = Integer(required=True)
    return User


UserV1, UserV2, UserBad = _user_v1(), _user_v2(), _user_bad()


# ------------------------------------------------------------------ helpers --

def schema_url(quire, topic, suffix="schema"):
    tenant, ns, local = topic.split("://", 1)[1].split("/")
    return f"{quire.web_url}/admin/v2/schemas/{tenant}/{ns}/{urllib.parse.quote(local, safe='')}/{suffix}"


def new_namespace(quire, strategy=None):
    ns = unique("schema-ns")
    status, _ = http("PUT", f"{quire.web_url}/admin/v2/namespaces/public/{ns}", "{}")
    assert status in (200, 204), status
    if strategy:
        set_strategy(quire, f"public/{ns}", strategy)
    return f"public/{ns}"


def set_strategy(quire, ns, strategy):
    status, body = http("PUT", f"{quire.web_url}/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy",
                        json.dumps(strategy))
    assert status == 204, (status, body)
    status, body = http_json("GET", f"{quire.web_url}/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy")
    assert status == 200 and body == strategy, (status, body)


def eventually(fn, timeout=10.0):
    """Retries fn until it returns without an AssertionError (policy watches are async)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def get_schema(quire, topic, version=None):
    return http_json("GET", schema_url(quire, topic, "schema" if version is None else f"schema/{version}"))


def post_schema(quire, topic, schema_type, definition, properties=None):
    body = {"type": schema_type, "schema": definition, "properties": properties or {}}
    return http_json("POST", schema_url(quire, topic), json.dumps(body))


def avro_def(record_cls):
    return AvroSchema(record_cls).schema_info().schema()


class LoggedClient:
    """A pulsar.Client whose log (where the C++ client writes the server's error
    messages) is kept: refusal(fn) runs fn, expects IncompatibleSchema, and
    returns the reason the broker sent with it."""

    def __init__(self, service_url):
        # The C++ client's logger factory is process-wide: a later client's
        # lines may reach an earlier client's Python logger. They all
        # propagate to the root logger, where the capture listens.
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        logging.getLogger().addHandler(self.handler)
        self.logger = logging.getLogger(f"pulsar-client-{uuid.uuid4().hex[:8]}")
        self.logger.setLevel(logging.INFO)
        self.client = pulsar.Client(service_url, operation_timeout_seconds=15,
                                    connection_timeout_ms=5000, logger=self.logger)

    def refusal(self, fn):
        start = len(self.stream.getvalue())
        with pytest.raises(IncompatibleSchema):
            fn(self.client)
        for _ in range(50):  # the log line is written by the client's I/O thread
            lines = [line for line in self.stream.getvalue()[start:].splitlines()
                     if "Received error response from server: IncompatibleSchema (" in line]
            if lines:
                return lines[-1].split("IncompatibleSchema (", 1)[1].rsplit(") -- req_id", 1)[0]
            time.sleep(0.1)
        raise AssertionError("no IncompatibleSchema error with a reason in the client log:\n"
                             + self.stream.getvalue()[start:])

    def close(self):
        try:
            self.client.close()
        except Exception:
            pass
        logging.getLogger().removeHandler(self.handler)


@pytest.fixture
def logged(quire):
    c = LoggedClient(quire.service_url)
    yield c
    c.close()


# -------------------------------------------------------------------- tests --

def test_avro_produce_consume_typed(client, quire, topic):
    consumer = client.subscribe(topic, "s", schema=AvroSchema(UserV1))
    producer = client.create_producer(topic, schema=AvroSchema(UserV1))
    for i in range(5):
        producer.send(UserV1(name=f"n{i}", age=i))
    for i in range(5):
        msg = consumer.receive(RECEIVE_MS)
        assert msg.value().name == f"n{i}" and msg.value().age == i
        consumer.acknowledge(msg)
    status, body = get_schema(quire, topic)
    assert status == 200, body
    assert body["version"] == 0 and body["type"] == "AVRO"
    assert json.loads(body["data"]) == json.loads(avro_def(UserV1))
    assert isinstance(body["timestamp"], int) and body["properties"] == {}


def test_json_and_string_schemas(client, quire, topic):
    jt, st = topic + "-json", topic + "-str"
    jc = client.subscribe(jt, "s", schema=JsonSchema(UserV1))
    jp = client.create_producer(jt, schema=JsonSchema(UserV1))
    jp.send(UserV1(name="j", age=7))
    v = jc.receive(RECEIVE_MS).value()
    assert (v.name, v.age) == ("j", 7)
    assert get_schema(quire, jt)[1]["type"] == "JSON"
    sc = client.subscribe(st, "s", schema=StringSchema())
    sp = client.create_producer(st, schema=StringSchema())
    sp.send("hello")
    assert sc.receive(RECEIVE_MS).value() == "hello"
    assert get_schema(quire, st)[1]["type"] == "STRING"
    # A type change is refused by the default strategy (FULL)
    with pytest.raises(IncompatibleSchema):
        client.create_producer(st, schema=AvroSchema(UserV1))


def test_compatible_change_gets_next_version(client, quire, topic):
    p1 = client.create_producer(topic, schema=AvroSchema(UserV1))
    p1.send(UserV1(name="a", age=1))
    p2 = client.create_producer(topic, schema=AvroSchema(UserV2))
    p2.send(UserV2(name="b", age=2, email="b@x"))
    # The same schema again finds its version instead of adding one
    client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    status, body = http_json("GET", schema_url(quire, topic, "schemas"))
    assert status == 200, body
    versions = [(s["version"], json.loads(s["data"])["fields"][-1]["name"])
                for s in body["getSchemaResponses"]]
    assert versions == [(0, "age"), (1, "email")]
    assert get_schema(quire, topic)[1]["version"] == 1
    assert get_schema(quire, topic, 0)[1]["version"] == 0
    assert get_schema(quire, topic, 7)[0] == 404
    # A consumer with the new schema reads both
    consumer = client.subscribe(topic, "s", schema=AvroSchema(UserV2),
                                initial_position=pulsar.InitialPosition.Earliest)
    names = [consumer.receive(RECEIVE_MS).value().name for _ in range(2)]
    assert names == ["a", "b"]


def test_incompatible_change_refused(client, quire, topic):
    client.create_producer(topic, schema=AvroSchema(UserV1)).send(UserV1(name="a", age=1))
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserBad))
    # ... and a consumer that cannot read the topic's schema
    with pytest.raises(IncompatibleSchema):
        client.subscribe(topic, "bad", schema=AvroSchema(UserBad))
    # The registry is unchanged
    status, body = http_json("GET", schema_url(quire, topic, "schemas"))
    assert [s["version"] for s in body["getSchemaResponses"]] == [0]
    # Producers and consumers without a schema are still let in (Pulsar's default)
    plain = client.create_producer(topic)
    plain.send(b"raw")


def test_strategy_change_through_rest(client, quire):
    ns = new_namespace(quire)
    topic = f"persistent://{ns}/{unique('t')}"
    client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserBad))
    set_strategy(quire, ns, "ALWAYS_COMPATIBLE")
    eventually(lambda: client.create_producer(topic, schema=AvroSchema(UserBad)).close())
    assert get_schema(quire, topic)[1]["version"] == 1
    set_strategy(quire, ns, "ALWAYS_INCOMPATIBLE")

    def refused():
        try:
            client.create_producer(topic, schema=AvroSchema(UserV2)).close()
        except IncompatibleSchema:
            return
        raise AssertionError("accepted under ALWAYS_INCOMPATIBLE")
    eventually(refused)
    # FORWARD: v2 -> v1 shape (dropping a field with a default) is fine, BACKWARD the other way
    set_strategy(quire, ns, "BACKWARD")
    t2 = f"persistent://{ns}/{unique('t')}"
    client.create_producer(t2, schema=AvroSchema(UserV1)).close()
    client.create_producer(t2, schema=AvroSchema(UserV2)).close()  # new field has a default
    with pytest.raises(IncompatibleSchema):
        client.create_producer(t2, schema=AvroSchema(UserBad))  # new field without one


def test_rest_post_get_delete(quire, topic):
    d1, d2, bad = avro_def(UserV1), avro_def(UserV2), avro_def(UserBad)
    assert get_schema(quire, topic)[0] == 404
    status, body = post_schema(quire, topic, "AVRO", d1, {"owner": "tests"})
    assert status == 202 and body == {"version": {"version": 0}}, (status, body)
    status, body = get_schema(quire, topic)
    assert status == 200 and body["properties"] == {"owner": "tests"}
    assert post_schema(quire, topic, "AVRO", d1)[1] == {"version": {"version": 0}}  # same: same version
    # compatibility test, no change made
    status, body = http_json("POST", schema_url(quire, topic, "compatibility"),
                             json.dumps({"type": "AVRO", "schema": bad, "properties": {}}))
    assert status in (200, 202), (status, body)
    assert body["compatibility"] is False and body["schemaCompatibilityStrategy"] == "FULL", body
    # ... with the reason (Quire's addition to Pulsar's IsCompatibilityResponse)
    assert body["reason"] == ("Error during schema compatibility check with strategy FULL: the new "
                              "schema cannot read data written with schema version 0: "
                              "READER_FIELD_MISSING_DEFAULT_VALUE: field 'score' of User has no "
                              "default"), body
    status, body = http_json("POST", schema_url(quire, topic, "compatibility"),
                             json.dumps({"type": "AVRO", "schema": d2, "properties": {}}))
    assert body == {"compatibility": True, "schemaCompatibilityStrategy": "FULL"}
    # refusals: the reason names the strategy, the version and the field
    status, body = post_schema(quire, topic, "AVRO", bad)
    assert status == 409, (status, body)
    for part in ("strategy FULL", "schema version 0", "READER_FIELD_MISSING_DEFAULT_VALUE",
                 "field 'score' of User has no default"):
        assert part in body["reason"], (part, body)
    status, body = post_schema(quire, topic, "STRING", "")
    assert status == 409, (status, body)
    assert body["reason"] == ("Incompatible schema: exists schema type AVRO, new schema type "
                              "STRING (schema version 0)"), body
    status, body = post_schema(quire, topic, "AVRO", "{not a schema")
    assert status == 422 and "Invalid schema definition data" in body["reason"], (status, body)
    assert post_schema(quire, topic, "BYTES", "")[0] == 406
    assert post_schema(quire, topic, "SQUARE", "")[0] == 400
    assert post_schema(quire, topic, "AVRO", d2)[1] == {"version": {"version": 1}}
    status, body = http_json("POST", schema_url(quire, topic, "version"),
                             json.dumps({"type": "AVRO", "schema": d1, "properties": {}}))
    assert body == {"version": 0}
    # delete: a marker version; nothing visible until a new upload, which continues the numbering
    status, body = http_json("DELETE", schema_url(quire, topic))
    assert status == 200 and body == {"version": 2}, (status, body)
    assert get_schema(quire, topic)[0] == 404
    assert get_schema(quire, topic, 0)[0] == 404
    assert http_json("GET", schema_url(quire, topic, "schemas"))[1] == {"getSchemaResponses": []}
    assert post_schema(quire, topic, "AVRO", bad)[1] == {"version": {"version": 3}}  # no history to check
    # force delete removes everything: numbering restarts
    assert http_json("DELETE", schema_url(quire, topic) + "?force=true")[0] == 200
    assert post_schema(quire, topic, "STRING", "")[1] == {"version": {"version": 0}}
    # unknown namespace
    other = f"persistent://public/{unique('nope')}/t"
    assert get_schema(quire, other)[0] == 404


def test_rest_upload_then_typed_clients(client, quire, topic):
    assert post_schema(quire, topic, "AVRO", avro_def(UserV1))[0] == 202
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserBad))
    p = client.create_producer(topic, schema=AvroSchema(UserV1))
    c = client.subscribe(topic, "s", schema=AvroSchema(UserV1))
    p.send(UserV1(name="z", age=26))
    assert c.receive(RECEIVE_MS).value().name == "z"


def test_partitions_share_the_topic_schema(client, quire, topic):
    status, _ = http("PUT", f"{quire.web_url}/admin/v2/persistent/public/default/"
                     f"{topic.rsplit('/', 1)[1]}/partitions", "3")
    assert status == 204
    producer = client.create_producer(topic, schema=AvroSchema(UserV1))
    consumer = client.subscribe(topic, "s", schema=AvroSchema(UserV1))
    for i in range(6):
        producer.send(UserV1(name=str(i), age=i), partition_key=str(i))
    got = sorted(consumer.receive(RECEIVE_MS).value().age for _ in range(6))
    assert got == list(range(6))
    status, body = http_json("GET", schema_url(quire, topic, "schemas"))
    assert [s["version"] for s in body["getSchemaResponses"]] == [0]  # one schema, not one per partition
    assert get_schema(quire, topic + "-partition-1")[1]["version"] == 0
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic + "-partition-2", schema=AvroSchema(UserBad))


def test_auto_update_disabled_and_validation_enforced(client, quire):
    ns = new_namespace(quire)
    topic = f"persistent://{ns}/{unique('t')}"
    client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    status, _ = http("POST", f"{quire.web_url}/admin/v2/namespaces/{ns}/isAllowAutoUpdateSchema", "false")
    assert status == 204

    def no_new_versions():
        try:
            client.create_producer(topic, schema=AvroSchema(UserV2)).close()
        except IncompatibleSchema:
            return
        raise AssertionError("a new version was registered with auto update disabled")
    eventually(no_new_versions)
    client.create_producer(topic, schema=AvroSchema(UserV1)).close()  # a known schema is fine
    client.create_producer(topic).close()  # no schema: allowed unless enforced
    status, _ = http("POST", f"{quire.web_url}/admin/v2/namespaces/{ns}/schemaValidationEnforced", "true")
    assert status == 204

    def enforced():
        try:
            client.create_producer(topic).close()
        except IncompatibleSchema:
            return
        raise AssertionError("a producer without a schema was let in")
    eventually(enforced)


def test_consumer_registers_schema_on_idle_topic(client, quire, topic):
    client.subscribe(topic, "s", schema=AvroSchema(UserV1))
    status, body = get_schema(quire, topic)
    assert status == 200 and body["version"] == 0
    with pytest.raises(IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserBad))


def test_consumer_schema_refused_on_active_schemaless_topic(logged, quire, topic):
    """Pulsar refuses a consumer with a schema on a topic that has none but is
    in use (here: data written without a schema); schemaless consumers go on."""
    producer = logged.client.create_producer(topic)
    producer.send(b"raw bytes")
    why = logged.refusal(lambda c: c.subscribe(topic, "typed", schema=AvroSchema(UserV1)))
    assert why == ("Failed to add schema to an active topic with empty(BYTES) schema: "
                   "new schema type AVRO"), why
    assert get_schema(quire, topic)[0] == 404  # nothing registered
    consumer = logged.client.subscribe(topic, "plain", initial_position=pulsar.InitialPosition.Earliest)
    assert consumer.receive(timeout_millis=10000).data() == b"raw bytes"
    consumer.close()
    producer.close()


@pytest.mark.needs_restart
def test_schemas_persist_across_restart(fresh_quire):
    topic = f"persistent://public/default/{unique('persist')}"
    c = pulsar.Client(fresh_quire.service_url, operation_timeout_seconds=15)
    try:
        c.create_producer(topic, schema=AvroSchema(UserV1)).close()
        c.create_producer(topic, schema=AvroSchema(UserV2)).close()
    finally:
        c.close()
    fresh_quire.restart()
    status, body = http_json("GET", schema_url(fresh_quire, topic, "schemas"))
    assert [s["version"] for s in body["getSchemaResponses"]] == [0, 1]
    c = pulsar.Client(fresh_quire.service_url, operation_timeout_seconds=15)
    try:
        with pytest.raises(IncompatibleSchema):
            c.create_producer(topic, schema=AvroSchema(UserBad))
        c.create_producer(topic, schema=AvroSchema(UserV2)).close()
    finally:
        c.close()
    assert get_schema(fresh_quire, topic)[1]["version"] == 1


def test_topic_deletion_removes_its_schema(client, quire, topic):
    client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    assert get_schema(quire, topic)[0] == 200
    local = topic.rsplit("/", 1)[1]
    status, body = http("DELETE", f"{quire.web_url}/admin/v2/persistent/public/default/{local}")
    assert status == 204, (status, body)
    eventually(lambda: _assert_status(get_schema(quire, topic)[0], 404))
    # The name starts over: any schema is the first one
    client.create_producer(topic, schema=AvroSchema(UserBad)).close()
    assert get_schema(quire, topic)[1]["version"] == 0


def test_refusal_reasons_reach_the_client(logged, quire, topic):
    logged.client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    # a producer: the namespace's strategy (FULL), the version, Avro's finding
    why = logged.refusal(lambda c: c.create_producer(topic, schema=AvroSchema(UserBad)))
    assert why == ("Error during schema compatibility check with strategy FULL: the new schema "
                   "cannot read data written with schema version 0: "
                   "READER_FIELD_MISSING_DEFAULT_VALUE: field 'score' of User has no default"), why
    # a consumer: Pulsar checks it BACKWARD against the latest under FULL
    why = logged.refusal(lambda c: c.subscribe(topic, "s", schema=AvroSchema(UserBad)))
    assert why == ("Error during schema compatibility check with strategy BACKWARD: the new "
                   "schema cannot read data written with schema version 0: "
                   "READER_FIELD_MISSING_DEFAULT_VALUE: field 'score' of User has no default"), why
    # a type change (Pulsar's wording, and the version)
    why = logged.refusal(lambda c: c.create_producer(topic, schema=StringSchema()))
    assert why == "Incompatible schema: exists schema type AVRO, new schema type STRING (schema version 0)"


def test_refusal_reasons_of_namespace_policies(logged, quire):
    ns = new_namespace(quire, "FORWARD")
    topic = f"persistent://{ns}/{unique('t')}"
    logged.client.create_producer(topic, schema=AvroSchema(UserBad)).close()
    # FORWARD: the stored version must read data of the new schema; without
    # score, which it requires with no default, it cannot
    why = logged.refusal(lambda c: c.create_producer(topic, schema=AvroSchema(UserV1)))
    assert why == ("Error during schema compatibility check with strategy FORWARD: schema version 0 "
                   "cannot read data written with the new schema: "
                   "READER_FIELD_MISSING_DEFAULT_VALUE: field 'score' of User has no default"), why
    status, _ = http("POST", f"{quire.web_url}/admin/v2/namespaces/{ns}/isAllowAutoUpdateSchema", "false")
    assert status == 204

    def auto_update_refused():
        why = logged.refusal(lambda c: c.create_producer(topic, schema=AvroSchema(UserV2)))
        assert why == "Schema not found and schema auto updating is disabled.", why
    eventually(auto_update_refused)


def test_always_incompatible_refuses_an_identical_consumer_schema(logged, quire):
    ns = new_namespace(quire, "ALWAYS_INCOMPATIBLE")
    topic = f"persistent://{ns}/{unique('t')}"
    producer = logged.client.create_producer(topic, schema=AvroSchema(UserV1))  # the first: stored
    producer.send(UserV1(name="a", age=1))
    # A producer with the same schema finds its version (Pulsar's putSchemaIfAbsent) ...
    logged.client.create_producer(topic, schema=AvroSchema(UserV1)).close()
    # ... but a consumer is checked against every version with no equality
    # shortcut (Pulsar's checkConsumerCompatibility): refused, even identical.
    why = logged.refusal(lambda c: c.subscribe(topic, "s", schema=AvroSchema(UserV1)))
    assert why == "Schema compatibility strategy is ALWAYS_INCOMPATIBLE", why
    # A type change is reported as such first
    why = logged.refusal(lambda c: c.subscribe(topic, "s", schema=StringSchema()))
    assert why == "Incompatible schema: exists schema type AVRO, new schema type STRING (schema version 0)"
    # A consumer without a schema is still let in
    logged.client.subscribe(topic, "plain").close()
    assert http_json("GET", schema_url(quire, topic, "schemas"))[1]["getSchemaResponses"][0]["version"] == 0


@pytest.mark.needs_restart
def test_validation_enforced_read_for_a_namespace_not_loaded(fresh_quire):
    """After a restart nothing has loaded the namespace's policies when the
    first producer arrives: schemaValidationEnforced must come from them, not
    from the defaults of an empty cache."""
    ns = new_namespace(fresh_quire)
    topic = f"persistent://{ns}/{unique('t')}"
    status, _ = http("POST", f"{fresh_quire.web_url}/admin/v2/namespaces/{ns}/schemaValidationEnforced", "true")
    assert status == 204
    assert post_schema(fresh_quire, topic, "AVRO", avro_def(UserV1))[0] == 202
    fresh_quire.restart()
    c = LoggedClient(fresh_quire.service_url)
    try:
        why = c.refusal(lambda cl: cl.create_producer(topic))  # the first thing the broker sees
        assert why == ("Producers cannot connect or send message without a schema to topics with "
                       "a schema when SchemaValidationEnforced is enabled"), why
        c.client.create_producer(topic, schema=AvroSchema(UserV1)).close()
        # a topic of the namespace without a schema takes producers without one
        c.client.create_producer(f"persistent://{ns}/{unique('plain')}").close()
    finally:
        c.close()


def _assert_status(got, want):
    assert got == want, got
