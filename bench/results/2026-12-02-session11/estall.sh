#!/bin/bash
# estall.sh BUILD TAG SEQ... : like emem.sh; during each (e) run, 18 and 21 s after it starts
# (its producers stop at about 13 s), saves every topic's stats (admin REST) to
# /tmp/p11/TAG-i-stats-{18,21}.json (with internalStats), to see where messages wait when consumers stop getting them
B=$1; TAG=$2; shift 2
cd /work/main
D=$(mktemp -d /tmp/p11/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=${QLOG:-warn} $QARGS > /tmp/p11/q-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port; i=0
snap() { # prefix out
  python3 - "$wport" "$1" "$2" <<'PY'
import json, sys, urllib.request
port, prefix, out = sys.argv[1:4]
res = {}
for n in range(100):
    t = "%s-%d" % (prefix, n)
    try:
        res[t] = json.load(urllib.request.urlopen("http://127.0.0.1:%s/admin/v2/persistent/public/default/%s/stats" % (port, t), timeout=5))
        res[t]["internal"] = json.load(urllib.request.urlopen("http://127.0.0.1:%s/admin/v2/persistent/public/default/%s/internalStats" % (port, t), timeout=5))
    except Exception as e:
        res[t] = {"error": str(e)}
json.dump(res, open(out, "w"))
PY
}
for s in "$@"; do
  i=$((i+1))
  case $s in
    a) args="--topics a-$TAG-$i --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    b) args="--topics b-$TAG-$i --size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000";;
    c) args="--topics c-$TAG-$i --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    d) args="--topics d-$TAG-$i --size 1024 --rate 0 --disable-batching --max-pending 1";;
    e) args="--topic-prefix e-$TAG-$i --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000";;
  esac
  $P both --service-url $U $args --seconds 10 --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p11/$TAG-$i-$s.txt 2>&1 &
  PP=$!
  if [ $s = e ]; then sleep 18; snap e-$TAG-$i /tmp/p11/$TAG-$i-stats-18.json; sleep 2; snap e-$TAG-$i /tmp/p11/$TAG-$i-stats-21.json; fi
  wait $PP
  echo "$(date +%T) $TAG $i $s $(grep 'produced ' /tmp/p11/$TAG-$i-$s.txt | tail -n1 | awk '{print $4}') msg/s cons $(grep 'consumed ' /tmp/p11/$TAG-$i-$s.txt | tail -n1 | awk '{print $4}') | $(grep -o 'drain timed out.*' /tmp/p11/$TAG-$i-$s.txt) | VmHWM $(awk '/VmHWM/ {printf "%.0f", $2/1024}' /proc/$QP/status)"
done
kill $QP; wait $QP; rm -rf $D
