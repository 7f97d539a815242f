#!/bin/bash
# fparts.sh REPS SCENARIOS LABEL:CMD...: scenario (f) alone (session 30's fab.sh steps)
# and/or (c) alone (1 KiB at 50,000 msg/s, 12 s after a 2-s warm-up), SCENARIOS "f", "c"
# or "fc", each on a fresh server, the servers given alternating. CMD must start the
# server with --statsUpdateFrequencyInSecs=1 (a wrapper script adding it), so that each
# 1-s window of /metrics' latency summaries is one row: /metrics is read every second
# during the measured phase and fparts.py prints each window's quantiles: the broker's
# part of a publish (pulsar_broker_publish_latency), the bookie's add
# (bookie_journal_JOURNAL_ADD_ENTRY: from its submission to its group's durability, the
# group before it included), the journal's fdatasync and a group's direct-log write and
# fdatasync; with the client's publish latency (quire-perf) over the same phase.
here=$(dirname "$0")
. "$here/../2026-12-05-session30/srv.sh"
reps=$1 scen=$2; shift 2
n=$(( 2000 * 1000000 / 1024 ))
scrape() { while kill -0 $1 2>/dev/null; do curl -s http://127.0.0.1:$wp/metrics > $d.m.$(date +%s.%N); sleep 1; done; }
# Two reads a second apart: the windows before the measured phase are closed (the
# second leaves an empty one).
fence() { curl -s http://127.0.0.1:$wp/metrics > /dev/null; sleep 1.05; curl -s http://127.0.0.1:$wp/metrics > /dev/null; }
client() { grep 'publish latency' $1 | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//'; }
for r in $(seq 1 $reps); do
  for spec in "$@"; do
    label=${spec%%:*} cmd=${spec#*:}
    if [[ $scen == *f* ]]; then
      quire_start $cmd
      timeout 60 $PERF consume --service-url $U --topics f --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
      timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 0 --max-pending 10000 --messages $n --warmup-seconds 0 > /dev/null 2>&1
      sync; sleep 1; fence
      timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 50000 --max-pending 10000 --seconds 900 --warmup-seconds 0 > $d.live 2>&1 &
      lp=$!
      scrape $lp &
      sleep 1
      cons=$(timeout 600 $PERF consume --service-url $U --topics f --subscription catchup --messages $n --warmup-seconds 0 --receiver-queue-size 10000 --subscription-position Earliest 2>&1 | grep -E '^ *consumed' | tail -1)
      kill -INT $lp; wait $lp
      echo "r$r $label (f) catch-up $(echo $cons | awk '{print $6, "MB/s"}') client $(client $d.live)"
      python3 "$here/fparts.py" $d.m.*
      rm -f $d.live $d.m.*
      quire_stop
    fi
    if [[ $scen == *c* ]]; then
      quire_start $cmd
      timeout 60 $PERF produce --service-url $U --topics c --size 1024 --rate 50000 --max-pending 10000 --seconds 12 --warmup-seconds 2 > $d.live 2>&1 &
      lp=$!
      sleep 1; fence
      scrape $lp
      echo "r$r $label (c) client $(client $d.live)"
      python3 "$here/fparts.py" $d.m.*
      rm -f $d.live $d.m.*
      quire_stop
    fi
  done
done
