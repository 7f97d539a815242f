"""Fixtures for the compatibility suite: a Quire server started by the tests.

Targets (env QUIRE_COMPAT_TARGET):
  quire (default)  start `$QUIRE_BIN standalone` on free 127.0.0.1 ports with a fresh
                   data directory; QUIRE_BIN defaults to <repo>/build/src/quire. If the
                   binary does not exist the whole compat suite is skipped.
  pulsar / external  use an already running server: PULSAR_SERVICE_URL (default
                   pulsar://127.0.0.1:6650) and PULSAR_WEB_URL (default
                   http://127.0.0.1:8080). Tests marked `needs_restart` (kill -9,
                   restart) are skipped there. Used to validate the tests themselves
                   against Apache Pulsar (bench/pulsar/run-standalone.sh).

Fixtures:
  quire        module-scoped server (shared by the tests of one file); checked
               alive before each test, and a test during which it died fails.
  fresh_quire  function-scoped server of its own (for crash/restart tests).
  client       a pulsar.Client on `quire`, closed after the test.
  topic        a unique persistent topic name for the test.
"""
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import shutil
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
QUIRE_BIN = Path(os.environ.get("QUIRE_BIN", str(ROOT / "build" / "src" / "quire")))
TARGET = os.environ.get("QUIRE_COMPAT_TARGET", "quire").lower()
EXTERNAL = TARGET in ("pulsar", "external")
START_TIMEOUT = float(os.environ.get("QUIRE_COMPAT_START_TIMEOUT", "20"))
# Optional: after the binary port accepts, also wait for web_url + this path to answer
# 200 (e.g. /admin/v2/namespaces/public/default; used with bench/pulsar/quire-shim.sh).
READY_PATH = os.environ.get("QUIRE_COMPAT_READY_PATH", "")
STOP_TIMEOUT = 10.0
LOG_TAIL_LINES = 80


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs_restart: the test stops/kills/restarts the server (not on external targets)")


def pytest_collection_modifyitems(config, items):
    reason = None
    if not EXTERNAL and not QUIRE_BIN.exists():
        reason = (f"compat suite skipped: Quire binary {QUIRE_BIN} does not exist "
                  "(build it, or set QUIRE_BIN; QUIRE_COMPAT_TARGET=pulsar for a running Pulsar)")
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        elif EXTERNAL and item.get_closest_marker("needs_restart"):
            item.add_marker(pytest.mark.skip(
                reason=f"needs to stop/restart the server; not possible on target {TARGET}"))


def free_port():
    """A port that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path, lines=LOG_TAIL_LINES):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
        return "\n".join(data.splitlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def _die_with_parent():
    """A preexec_fn that has the kernel SIGKILL the server when pytest dies, so a
    pytest killed by an outer timeout leaves no server behind (PR_SET_PDEATHSIG).
    The signal follows the forking *thread*: only set from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None

    def preexec():
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return preexec


class QuireServer:
    """One `quire standalone` process on 127.0.0.1, free ports, its own data dir."""

    def __init__(self, binary=QUIRE_BIN, data_dir=None, extra_args=()):
        self.binary = Path(binary)
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="quire-compat-"))
        self.port = free_port()
        self.web_port = free_port()
        while self.web_port == self.port:
            self.web_port = free_port()
        self.extra_args = list(extra_args)
        self.proc = None
        self.log_path = self.data_dir / "quire-server.log"
        self.expected_down = False  # set while a test deliberately stops it
        self.starts = 0

    service_url = property(lambda self: f"pulsar://127.0.0.1:{self.port}")
    web_url = property(lambda self: f"http://127.0.0.1:{self.web_port}")
    host_port = property(lambda self: ("127.0.0.1", self.port))
    external = False

    def command(self):
        return [str(self.binary), "standalone",
                "--data-dir", str(self.data_dir),
                f"--brokerServicePort={self.port}",
                f"--webServicePort={self.web_port}",
                "--bindAddress=127.0.0.1",
                "--advertisedAddress=127.0.0.1"] + self.extra_args

    def start(self, timeout=START_TIMEOUT):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        log = open(self.log_path, "ab")
        log.write(f"\n===== start #{self.starts}: {' '.join(self.command())}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_die_with_parent())
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise RuntimeError(f"quire exited with status {rc} while starting; log tail:\n"
                                   + self.log_tail())
            try:
                with socket.create_connection(self.host_port, timeout=0.5):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self._terminate()
                raise RuntimeError(f"quire did not accept connections on {self.host_port} "
                                   f"within {timeout:.0f}s; log tail:\n" + self.log_tail())
            time.sleep(0.1)
        while READY_PATH:
            if self.proc.poll() is not None:
                raise RuntimeError("quire exited while starting; log tail:\n" + self.log_tail())
            try:
                import urllib.request
                with urllib.request.urlopen(self.web_url + READY_PATH, timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if time.monotonic() > deadline:
                self._terminate()
                raise RuntimeError(f"{self.web_url}{READY_PATH} not ready within {timeout:.0f}s; "
                                   "log tail:\n" + self.log_tail())
            time.sleep(0.2)
        self.expected_down = False
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _terminate(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        return self.proc.returncode

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM, SIGKILL after `timeout` s. Returns the exit status."""
        self.expected_down = True
        return self._terminate(signal.SIGTERM, timeout)

    def kill9(self):
        self.expected_down = True
        return self._terminate(signal.SIGKILL)

    def restart(self, kill=False):
        """Stop (SIGTERM, or SIGKILL if kill) and start again: same ports, same data dir."""
        if kill:
            self.kill9()
        else:
            self.stop()
        return self.start()

    def log_tail(self, lines=LOG_TAIL_LINES):
        return _tail(self.log_path, lines)

    def cleanup(self):
        self.stop()
        if self._own_dir and not os.environ.get("QUIRE_COMPAT_KEEP_DATA"):
            shutil.rmtree(self.data_dir, ignore_errors=True)


class ExternalServer:
    """An already running server (QUIRE_COMPAT_TARGET=pulsar): cannot be stopped."""
    external = True
    expected_down = False

    def __init__(self):
        self.service_url = os.environ.get("PULSAR_SERVICE_URL", "pulsar://127.0.0.1:6650")
        self.web_url = os.environ.get("PULSAR_WEB_URL", "http://127.0.0.1:8080").rstrip("/")
        hp = self.service_url.split("://", 1)[1].rstrip("/")
        host, port = hp.rsplit(":", 1)
        self.host_port = (host, int(port))
        self.port = int(port)
        self.data_dir = None
        self.log_path = None

    def alive(self):
        try:
            with socket.create_connection(self.host_port, timeout=2):
                return True
        except OSError:
            return False

    def _no(self, *a, **k):
        pytest.skip(f"cannot stop/restart the external target {TARGET}")

    stop = kill9 = restart = start = _no

    def log_tail(self, lines=LOG_TAIL_LINES):
        return "(external server: no log)"

    def cleanup(self):
        pass


def _new_server():
    if EXTERNAL:
        return ExternalServer()
    return QuireServer().start()


@pytest.fixture(scope="module")
def _module_server():
    srv = _new_server()
    yield srv
    srv.cleanup()


def _guard(srv):
    """Before the test: a dead shared server is replaced. After: it must be alive."""
    if not srv.external and not srv.alive():
        srv.start()
    yield srv
    if srv.external or srv.expected_down:
        return
    if not srv.alive():
        rc = srv.proc.returncode
        pytest.fail(f"the server process exited (status {rc}) during the test; log tail:\n"
                    + srv.log_tail(), pytrace=False)


@pytest.fixture
def quire(_module_server):
    yield from _guard(_module_server)


@pytest.fixture
def fresh_quire():
    srv = _new_server()
    try:
        yield from _guard(srv)
    finally:
        srv.cleanup()


@pytest.fixture
def client(quire):
    import pulsar
    c = pulsar.Client(quire.service_url, operation_timeout_seconds=15,
                      connection_timeout_ms=5000)
    yield c
    try:
        c.close()
    except Exception:
        pass


@pytest.fixture
def topic(request):
    name = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")
    name = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)[:60]
    return f"persistent://public/default/{name}-{uuid.uuid4().hex[:8]}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        funcargs = getattr(item, "funcargs", {}) or {}
        for name in ("quire", "fresh_quire"):
            srv = funcargs.get(name)
            if srv is not None and not getattr(srv, "external", True):
                rep.sections.append((f"{name} server log tail ({srv.log_path})", srv.log_tail()))
