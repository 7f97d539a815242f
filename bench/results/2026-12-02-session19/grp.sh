#!/bin/bash
# grp.sh BUILD [quire args]: (a) for 8 s; journal syncs and add bytes over the run: bytes per group
BUILD=$1; shift
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
m() { curl -s http://127.0.0.1:$W/metrics | grep -E '^(bookie_journal_JOURNAL_SYNC_count|bookkeeper_server_ADD_ENTRY_BYTES_total|quire_bookie_reads_yielded_total)' | awk '{print $2}' | tr '\n' ' '; }
timeout 60 $BUILD/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics a --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 8 --warmup-seconds 0 --json $D/a.json >/dev/null 2>&1 &
sleep 2; a=$(m); sleep 5; b=$(m)
wait %2 2>/dev/null; sleep 1
python3 -c "
a='$a'.split(); b='$b'.split()
s=float(b[0])-float(a[0]); by=float(b[1])-float(a[1])
print('syncs/s %.0f  MB/s %.1f  KB/group %.0f' % (s/5, by/5e6, by/s/1e3))"
