# run emem (e) with BUSY=3 and read one topic's consumer avgMessagesPerEntry at 6 and 10 s
B=$1; TAG=$2
( sleep 7; W=$(ls -t /tmp/p12/q-$TAG.log >/dev/null; ss -ltnp | grep quire | awk '{print $4}' | sed 's/.*://' | sort -n | tr '\n' ' '); for p in $W; do curl -s -m 2 http://127.0.0.1:$p/admin/v2/persistent/public/default/e-$TAG-1-0/stats 2>/dev/null | python3 -c 'import sys,json
try:
  d=json.load(sys.stdin); print("avgMessagesPerEntry", [c["avgMessagesPerEntry"] for s in d["subscriptions"].values() for c in s["consumers"]], "msgRateIn", d.get("msgRateIn"), "averageMsgSize", d.get("averageMsgSize"))
except Exception as e: pass'; done ) &
BUSY=3 bash /work/main/bench/results/2026-12-01-session12/emem.sh $B $TAG e
wait
