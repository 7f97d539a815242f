"""Bad input on the binary port never takes the server down.

Frames are built by hand (struct + hand-encoded protobuf) to send what no client
would: garbage, TLS and HTTP on the plain port, oversized frames, a wrong checksum,
an unknown command, extreme FLOW permits. Each must get an error or a closed
connection within a bound, and afterwards a normal client still works."""
import os
import socket
import struct
import time
import uuid

import pulsar
import pytest

from compat_helpers import new_client, receive_n

BOUND_S = 10.0
MAX_FRAME = 5 * 1024 * 1024 + 10 * 1024

# BaseCommand.Type values (PulsarApi.proto)
CONNECT, CONNECTED, SUBSCRIBE, PRODUCER, SEND, SEND_RECEIPT, SEND_ERROR = 2, 3, 4, 5, 6, 7, 8
MESSAGE, FLOW, SUCCESS, ERROR, PRODUCER_SUCCESS, PING, PONG = 9, 11, 13, 14, 17, 18, 19
LOOKUP, LOOKUP_RESPONSE = 23, 24
CHECKSUM_ERROR = 9  # ServerError.ChecksumError


# ---- hand-written protobuf encoding -------------------------------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(field, value):
    return varint(field << 3) + varint(value)


def f_bytes(field, value):
    if isinstance(value, str):
        value = value.encode()
    return varint((field << 3) | 2) + varint(len(value)) + value


def base_command(ctype, field=None, body=b""):
    out = f_varint(1, ctype)
    if field is not None:
        out += f_bytes(field, body)
    return out


def simple_frame(cmd):
    return struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd


_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def payload_frame(cmd, metadata, payload, bad_crc=False):
    tail = struct.pack(">I", len(metadata)) + metadata + payload
    crc = crc32c(tail)
    if bad_crc:
        crc ^= 0xDEADBEEF
    rest = cmd + b"\x0e\x01" + struct.pack(">I", crc) + tail
    return struct.pack(">II", 4 + len(rest), len(cmd)) + rest


def parse_fields(buf):
    """Top-level fields of a protobuf message: {field: [value (int or bytes)]}."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(buf, i)
        elif wt == 2:
            ln, i = _read_varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        out.setdefault(field, []).append(v)
    return out


def _read_varint(buf, i):
    shift = n = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7f) << shift
        if not b & 0x80:
            return n, i
        shift += 7


# ---- a raw connection ----------------------------------------------------------

class Closed(Exception):
    pass


class Raw:
    def __init__(self, host_port):
        self.sock = socket.create_connection(host_port, timeout=BOUND_S)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no frame within the bound")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                raise Closed()
            if not chunk:
                raise Closed()
            self.buf += chunk

    def read_frame(self, timeout=BOUND_S):
        """Returns (type, fields of the typed sub-command, BaseCommand fields)."""
        deadline = time.monotonic() + timeout
        self._fill(4, deadline)
        total = struct.unpack(">I", self.buf[:4])[0]
        self._fill(4 + total, deadline)
        frame, self.buf = self.buf[4:4 + total], self.buf[4 + total:]
        cmd_size = struct.unpack(">I", frame[:4])[0]
        fields = parse_fields(frame[4:4 + cmd_size])
        ctype = fields[1][0]
        sub = {}
        for f, vals in fields.items():
            if f != 1 and isinstance(vals[0], bytes):
                sub = parse_fields(vals[0])
        return ctype, sub, fields

    def expect(self, wanted, timeout=BOUND_S):
        """Next frame that is not a PING (answered); must be one of `wanted`."""
        deadline = time.monotonic() + timeout
        while True:
            ctype, sub, _ = self.read_frame(max(0.1, deadline - time.monotonic()))
            if ctype == PING:
                self.send(simple_frame(base_command(PONG, 19, b"")))
                continue
            assert ctype in wanted, f"got command type {ctype} ({sub}), wanted {wanted}"
            return ctype, sub

    def connect(self):
        body = f_bytes(1, "quire-compat-raw") + f_varint(4, 20)
        self.send(simple_frame(base_command(CONNECT, 2, body)))
        ctype, sub = self.expect({CONNECTED})
        return sub

    def lookup(self, topic, request_id=100):
        body = f_bytes(1, topic) + f_varint(2, request_id) + f_varint(3, 0)
        self.send(simple_frame(base_command(LOOKUP, 23, body)))
        _, sub = self.expect({LOOKUP_RESPONSE})
        return sub

    def error_or_closed(self, timeout=BOUND_S, ok_types=(ERROR, SEND_ERROR)):
        """Waits for an error frame or the connection to close. Returns a description."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                ctype, sub, _ = self.read_frame(max(0.1, deadline - time.monotonic()))
                if ctype in ok_types:
                    return f"error frame {ctype}"
                if ctype == PING:
                    continue
        except Closed:
            return "closed"
        except socket.timeout:
            raise AssertionError(f"neither an error nor a close within {timeout}s")

    def alive_after(self, timeout=BOUND_S):
        """The connection is closed, or still answers a PING: 'closed' / 'alive'."""
        try:
            self.send(simple_frame(base_command(PING, 18, b"")))
            deadline = time.monotonic() + timeout
            while True:
                ctype, _, _ = self.read_frame(max(0.1, deadline - time.monotonic()))
                if ctype == PONG:
                    return "alive"
                if ctype == PING:
                    self.send(simple_frame(base_command(PONG, 19, b"")))
        except (Closed, BrokenPipeError, ConnectionResetError):
            return "closed"
        except socket.timeout:
            raise AssertionError("connection neither closed nor answering PING")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def metadata(seq, producer="raw-producer"):
    return f_bytes(1, producer) + f_varint(2, seq) + f_varint(3, int(time.time() * 1000))


def assert_server_works(srv):
    """A normal client still produces and consumes on the same server."""
    client = new_client(srv.service_url)
    try:
        t = f"persistent://public/default/after-bad-{uuid.uuid4().hex[:8]}"
        c = client.subscribe(t, "s", initial_position=pulsar.InitialPosition.Earliest)
        p = client.create_producer(t)
        sent = [f"ok-{i}".encode() for i in range(10)]
        for x in sent:
            p.send(x)
        assert [m.data() for m in receive_n(c, 10, ack=True)] == sent
    finally:
        client.close()
    assert srv.alive(), "server died"


@pytest.fixture
def raw(quire):
    conns = []

    def make():
        r = Raw(quire.host_port)
        conns.append(r)
        return r

    yield make
    for r in conns:
        r.close()


# ---- the cases -----------------------------------------------------------------

def test_valid_raw_handshake_and_send(quire, raw, client):
    """Sanity check of the hand encoding: a correct CONNECT/PRODUCER/SEND works."""
    topic = f"persistent://public/default/raw-ok-{uuid.uuid4().hex[:8]}"
    r = raw()
    connected = r.connect()
    assert 1 in connected  # server_version
    r.lookup(topic)
    r.send(simple_frame(base_command(PRODUCER, 5, f_bytes(1, topic) + f_varint(2, 1) + f_varint(3, 1)
                                     + f_bytes(4, "raw-producer"))))
    r.expect({PRODUCER_SUCCESS})
    send = base_command(SEND, 6, f_varint(1, 1) + f_varint(2, 0) + f_varint(3, 1))
    r.send(payload_frame(send, metadata(0), b"raw-hello"))
    ctype, sub = r.expect({SEND_RECEIPT})
    assert sub[2][0] == 0  # sequence_id
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.read_next(timeout_millis=10000).data() == b"raw-hello"
    reader.close()


def test_garbage_before_handshake(quire, raw):
    r = raw()
    # A plausible length, then a BaseCommand that is not protobuf at all
    r.send(struct.pack(">II", 36, 32) + b"\xff" * 32)
    assert r.error_or_closed() in ("closed", f"error frame {ERROR}")
    r2 = raw()
    r2.send(os.urandom(4096))
    # Random bytes: whatever the length field says, the server must not hang on
    # to the connection forever; closing it is the expected outcome.
    try:
        r2.error_or_closed(timeout=BOUND_S)
    except AssertionError:
        # A random length below the frame limit may make the server wait for the
        # rest; it must then still be usable by others (checked below).
        pass
    assert_server_works(quire)


def test_tls_client_hello_on_plain_port(quire, raw):
    r = raw()
    hello = bytes.fromhex("16030100c4010000c00303") + os.urandom(32) + b"\x00\x00\x02\x13\x01\x01\x00"
    hello += b"\x00" * (0xc4 + 5 - len(hello))
    r.send(hello)
    assert r.error_or_closed() == "closed"
    assert_server_works(quire)


def test_http_request_on_binary_port(quire, raw):
    r = raw()
    r.send(b"GET / HTTP/1.1\r\n\r\n")
    assert r.error_or_closed() == "closed"
    assert_server_works(quire)


def test_frame_above_max_size(quire, raw):
    r = raw()
    r.connect()
    r.send(struct.pack(">II", MAX_FRAME + 1, 8) + b"\x08\x12" + b"\x00" * 1000)
    assert r.error_or_closed() == "closed"
    r2 = raw()
    r2.send(struct.pack(">II", 0x7fffffff, 8) + b"\x00" * 100)  # before handshake
    assert r2.error_or_closed() == "closed"
    assert_server_works(quire)


def test_inconsistent_lengths(quire, raw):
    r = raw()
    r.connect()
    r.send(struct.pack(">II", 8, 1000) + b"\x08\x12\x92\x01\x00\x00\x00\x00")  # cmdSize > total
    assert r.error_or_closed() == "closed"
    assert_server_works(quire)


def test_send_with_wrong_checksum(quire, raw, client):
    topic = f"persistent://public/default/raw-crc-{uuid.uuid4().hex[:8]}"
    r = raw()
    r.connect()
    r.lookup(topic)
    r.send(simple_frame(base_command(PRODUCER, 5, f_bytes(1, topic) + f_varint(2, 1) + f_varint(3, 1)
                                     + f_bytes(4, "crc-producer"))))
    r.expect({PRODUCER_SUCCESS})
    send0 = base_command(SEND, 6, f_varint(1, 1) + f_varint(2, 0) + f_varint(3, 1))
    r.send(payload_frame(send0, metadata(0, "crc-producer"), b"corrupted", bad_crc=True))
    try:
        ctype, sub = r.expect({SEND_ERROR})
        assert sub[3][0] == CHECKSUM_ERROR, f"SEND_ERROR code {sub[3][0]}"
        still_open = True
    except Closed:
        still_open = False
    if still_open:
        # The connection keeps working: a correct SEND is stored
        send1 = base_command(SEND, 6, f_varint(1, 1) + f_varint(2, 1) + f_varint(3, 1))
        r.send(payload_frame(send1, metadata(1, "crc-producer"), b"correct"))
        r.expect({SEND_RECEIPT})
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = []
    while True:
        try:
            got.append(reader.read_next(timeout_millis=2000).data())
        except pulsar.Timeout:
            break
    reader.close()
    assert b"corrupted" not in got, "a message with a wrong checksum was stored"
    assert got == ([b"correct"] if still_open else [])
    assert_server_works(quire)


def test_unknown_command_type(quire, raw):
    r = raw()
    r.connect()
    r.send(simple_frame(f_varint(1, 999) + f_bytes(999, b"\x08\x01")))
    assert r.error_or_closed() in ("closed", f"error frame {ERROR}")
    r2 = raw()
    r2.connect()
    r2.send(simple_frame(b""))  # BaseCommand without the required type
    assert r2.error_or_closed() in ("closed", f"error frame {ERROR}")
    assert_server_works(quire)


@pytest.mark.parametrize("permits", [0, 2 ** 31, 2 ** 32 - 1])
def test_flow_with_extreme_permits(quire, raw, client, permits):
    topic = f"persistent://public/default/raw-flow-{uuid.uuid4().hex[:8]}"
    p = client.create_producer(topic, batching_enabled=False)
    r = raw()
    r.connect()
    r.lookup(topic)
    sub_body = (f_bytes(1, topic) + f_bytes(2, "raw-sub") + f_varint(3, 0) + f_varint(4, 7)
                + f_varint(5, 2) + f_varint(13, 1))  # Exclusive, consumer 7, Earliest
    r.send(simple_frame(base_command(SUBSCRIBE, 4, sub_body)))
    r.expect({SUCCESS})
    r.send(simple_frame(base_command(FLOW, 11, f_varint(1, 7) + f_varint(2, permits))))
    state = r.alive_after()
    if state == "alive":
        for i in range(3):
            p.send(f"flow-{i}".encode())
        got = []
        deadline = time.monotonic() + 3
        try:
            while time.monotonic() < deadline and len(got) < 3:
                ctype, sub, _ = r.read_frame(max(0.1, deadline - time.monotonic()))
                if ctype == MESSAGE:
                    got.append(ctype)
                elif ctype == PING:
                    r.send(simple_frame(base_command(PONG, 19, b"")))
        except (socket.timeout, Closed):
            pass
        if permits == 0:
            assert got == [], "messages dispatched without permits"
        else:
            assert len(got) == 3, f"{len(got)} of 3 messages with {permits} permits"
    p.close()
    assert_server_works(quire)


def test_many_bad_connections_in_a_row(quire):
    samples = [b"GET / HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
               struct.pack(">II", 36, 32) + b"\xff" * 32, b"\x00\x00\x00\x00", os.urandom(64)]
    for i in range(50):
        r = Raw(quire.host_port)
        try:
            r.send(samples[i % len(samples)])
        except OSError:
            pass
        r.close()
    assert_server_works(quire)


def test_large_sends_in_pieces(quire, raw, client):
    """SENDs larger than a connection's usual read buffer are received apart from
    it (server/connection.c, big_start): arriving in odd pieces, back to back with
    small ones, with a wrong checksum in the middle, each is stored exactly or
    refused alone, and the stream stays in step."""
    topic = f"persistent://public/default/raw-big-{uuid.uuid4().hex[:8]}"
    r = raw()
    r.connect()
    r.lookup(topic)
    r.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    r.send(simple_frame(base_command(PRODUCER, 5, f_bytes(1, topic) + f_varint(2, 1) + f_varint(3, 1)
                                     + f_bytes(4, "big-producer"))))
    r.expect({PRODUCER_SUCCESS})

    def send_frame(seq, payload, bad_crc=False):
        cmd = base_command(SEND, 6, f_varint(1, 1) + f_varint(2, seq) + f_varint(3, 1))
        return payload_frame(cmd, metadata(seq, "big-producer"), payload, bad_crc=bad_crc)

    big_a, big_bad, big_d = os.urandom(300_000), os.urandom(150_000), os.urandom(70_000)
    stream = (send_frame(0, big_a) + send_frame(1, big_bad, bad_crc=True) + send_frame(2, b"small-c")
              + send_frame(3, big_d) + send_frame(4, b"small-e"))
    # Pieces of 1, 3, 7 ... bytes and up to 96 KiB, apart in time so that the
    # server reads them separately: heads split, payloads in several reads.
    sizes, i, k = [1, 3, 7, 2, 64, 1000, 98_304, 5, 40_000, 65_536, 12], 0, 0
    while i < len(stream):
        n = sizes[k % len(sizes)]
        r.send(stream[i:i + n])
        i, k = i + n, k + 1
        time.sleep(0.002)
    receipts, errors = [], []
    while len(receipts) + len(errors) < 5:
        ctype, sub = r.expect({SEND_RECEIPT, SEND_ERROR})
        (receipts if ctype == SEND_RECEIPT else errors).append(sub)
    assert sorted(s[2][0] for s in receipts) == [0, 2, 3, 4]
    assert [(s[2][0], s[3][0]) for s in errors] == [(1, CHECKSUM_ERROR)]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = [reader.read_next(timeout_millis=10000).data() for _ in range(4)]
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=1000)
    reader.close()
    assert got == [big_a, b"small-c", big_d, b"small-e"]

    # A connection that goes away in the middle of a large SEND: nothing of it
    # is stored, and the server carries on.
    r2 = raw()
    r2.connect()
    r2.send(simple_frame(base_command(PRODUCER, 5, f_bytes(1, topic) + f_varint(2, 1) + f_varint(3, 1)
                                      + f_bytes(4, "cut-producer"))))
    r2.expect({PRODUCER_SUCCESS})
    cut = send_frame(5, os.urandom(200_000))
    r2.send(cut[:120_000])
    time.sleep(0.2)
    r2.close()
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert len([reader.read_next(timeout_millis=10000) for _ in range(4)]) == 4
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=1000)
    reader.close()
    assert_server_works(quire)
