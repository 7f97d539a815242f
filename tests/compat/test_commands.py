"""The `quire` command line: options are checked before anything starts.

`quire bookie` takes Pulsar/BookKeeper-named options and says what it runs with;
`quire standalone` refuses an out-of-range value of a broker or storage key with
exit status 2 and the key's name, before opening any data directory."""
import os
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import QUIRE_BIN

BOUND_S = 10.0


def run(args, timeout=BOUND_S):
    return subprocess.run([QUIRE_BIN] + args, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def test_bookie_storage_options():
    with tempfile.TemporaryDirectory(prefix="quire-bookie-cli-") as d:
        p = subprocess.Popen([QUIRE_BIN, "bookie", "--data-dir", d, "--bookiePort=0",
                              "--bindAddress=127.0.0.1", "--journalLargeEntryThreshold=65536",
                              "--journalLargeEntryDirectIo=false",
                              "--journalLargeEntryOneSync=false",
                              "--journalDirectIo=false",
                              "--journalFormatVersionToWrite=2",
                              "--readYieldToJournalUs=250",
                              "--spareFileZeroRateMB=0",
                              "--compactionRateByBytes=1048576",
                              "--minorCompactionThreshold=0.1", "--minorCompactionInterval=7200",
                              "--majorCompactionThreshold=-1", "--majorCompactionInterval=600",
                              "--dbStorage_writeCacheMaxSizeMb=24",
                              "--dbStorage_readAheadCacheMaxSizeMb=0",
                              "--diskUsageThreshold=0.97", "--diskUsageLwmThreshold=0.85",
                              "--diskUsageWarnThreshold=0.8", "--diskCheckInterval=5000"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + BOUND_S
            line = ""
            while time.monotonic() < deadline and "quire bookie: listening on" not in line:
                line = p.stdout.readline()
                if not line and p.poll() is not None:
                    break
            assert "quire bookie: listening on 127.0.0.1:" in line, line
            assert "journalLargeEntryThreshold=65536" in line, line
            assert "journalLargeEntryDirectIo=false" in line, line
            assert "journalLargeEntryOneSync=false" in line, line
            assert "journalDirectIo=false" in line, line
            assert "journalFormatVersionToWrite=2" in line, line
            assert "readYieldToJournalUs=250" in line, line
            assert "spareFileZeroRateMB=0" in line, line
            assert "compactionRateByBytes=1048576" in line, line
            assert "minorCompactionThreshold=0.1, minorCompactionInterval=7200" in line, line
            # a threshold <= 0 turns major compaction off, as in BookKeeper
            assert "majorCompactionThreshold=0, majorCompactionInterval=0" in line, line
            assert "dbStorage_writeCacheMaxSizeMb=24" in line, line
            assert "dbStorage_readAheadCacheMaxSizeMb=0" in line, line
            assert ("diskUsageThreshold=0.97, diskUsageLwmThreshold=0.85, "
                    "diskUsageWarnThreshold=0.8, diskCheckInterval=5000") in line, line
        finally:
            p.send_signal(signal.SIGTERM)
            assert p.wait(timeout=BOUND_S) == 0


@pytest.mark.parametrize("key,value", [
    ("journalLargeEntryThreshold", "-5"),
    ("journalLargeEntryThreshold", "99999999999"),
    ("journalLargeEntryThreshold", "abc"),
    ("journalLargeEntryThreshold", ""),
    ("journalLargeEntryDirectIo", "maybe"),
    ("journalLargeEntryOneSync", "sometimes"),
    ("journalDirectIo", "perhaps"),
    ("journalFormatVersionToWrite", "1"),
    ("journalFormatVersionToWrite", "4"),
    ("journalFormatVersionToWrite", "three"),
    ("readYieldToJournalUs", "-1"),
    ("readYieldToJournalUs", "1000001"),
    ("readYieldToJournalUs", "soon"),
    ("spareFileZeroRateMB", "-1"),
    ("spareFileZeroRateMB", "65537"),
    ("spareFileZeroRateMB", "fast"),
    ("compactionRateByBytes", "-1"),
    ("compactionRateByBytes", "99999999999"),
    ("compactionRateByBytes", "fast"),
    ("minorCompactionThreshold", "1.5"),
    ("minorCompactionThreshold", "often"),
    ("majorCompactionThreshold", "nan"),
    ("majorCompactionInterval", "1h"),
    ("minorCompactionInterval", "999999999999"),
    ("minorCompactionThreshold", "0.7"),  # above the major threshold (0.5), both on
    ("dbStorage_writeCacheMaxSizeMb", "0"),
    ("dbStorage_writeCacheMaxSizeMb", "65537"),
    ("dbStorage_readAheadCacheMaxSizeMb", "-1"),
    ("dbStorage_readAheadCacheMaxSizeMb", "lots"),
    ("diskUsageThreshold", "1.2"),
    ("diskUsageThreshold", "0"),
    ("diskUsageThreshold", "full"),
    ("diskUsageLwmThreshold", "0.99"),  # above the threshold (0.95)
    ("diskUsageWarnThreshold", "0"),
    ("diskUsageWarnThreshold", "1.1"),
    ("diskCheckInterval", "-1"),
    ("diskCheckInterval", "10s"),
])
def test_bookie_bad_value_refused(key, value):
    with tempfile.TemporaryDirectory(prefix="quire-bookie-cli-") as d:
        r = run(["bookie", "--data-dir", d, f"--{key}={value}"])
        assert r.returncode == 2
        assert key in r.stderr
        assert os.listdir(d) == []  # nothing opened


@pytest.mark.parametrize("key,value", [
    ("maxMessagePublishBufferSizeInMB", "-1"),
    ("dispatcherMaxReadSizeBytes", "10"),
    ("managedLedgerCacheEvictionTimeThresholdMillis", "-3"),
    ("cacheEvictionByExpectedReadCount", "maybe"),
    ("managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes", "-1"),
    ("managedLedgerCacheEvictionExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes", "many"),
    ("managedLedgerMaxReadsInFlightSizeInMB", "-1"),
    ("managedLedgerMaxReadsInFlightSizeInMB", "lots"),
    ("exposeTopicLevelMetricsInPrometheus", "maybe"),
    ("statsUpdateFrequencyInSecs", "0"),
    ("statsUpdateFrequencyInSecs", "3601"),
    ("statsUpdateFrequencyInSecs", "often"),
    ("journalLargeEntryDirectIo", "sometimes"),
    ("journalLargeEntryOneSync", "twice"),
    ("journalDirectIo", "often"),
    ("journalFormatVersionToWrite", "1"),
    ("journalFormatVersionToWrite", "4"),
    ("readYieldToJournalUs", "-1"),
    ("readYieldToJournalUs", "2000000"),
    ("readYieldToJournalUs", "soon"),
    ("spareFileZeroRateMB", "-1"),
    ("spareFileZeroRateMB", "lots"),
    ("bookkeeperClientTimeoutInSeconds", "0"),
    ("bookkeeperClientTimeoutInSeconds", "ten"),
    ("compactionRateByBytes", "-1"),
    ("compactionRateByBytes", "fast"),
    ("majorCompactionThreshold", "2"),
    ("minorCompactionInterval", "hourly"),
    ("minorCompactionThreshold", "0.9"),  # above the major threshold (0.5), both on
    ("dbStorage_writeCacheMaxSizeMb", "0"),
    ("dbStorage_readAheadCacheMaxSizeMb", "-5"),
    ("dbStorage_readAheadCacheMaxSizeMb", "99999999"),
    ("diskUsageThreshold", "1.5"),
    ("diskUsageThreshold", "-0.5"),
    ("diskUsageLwmThreshold", "0.96"),  # above the threshold (0.95)
    ("diskUsageLwmThreshold", "most"),
    ("diskUsageWarnThreshold", "-0.1"),
    ("diskUsageWarnThreshold", "nearly"),
    ("diskCheckInterval", "-10"),
    ("diskCheckInterval", "999999999999"),
    ("clusterName", 'stand"alone'),
    ("clusterName", "a/b"),
])
def test_standalone_bad_value_refused(key, value):
    with tempfile.TemporaryDirectory(prefix="quire-sa-cli-") as d:
        data = os.path.join(d, "data")
        r = run(["standalone", "--data-dir", data, "--brokerServicePort=0",
                 "--webServicePort=0", f"--{key}={value}"])
        assert r.returncode != 0
        assert key in (r.stdout + r.stderr)
