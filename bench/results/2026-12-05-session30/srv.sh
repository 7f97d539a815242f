# srv.sh, sourced by this directory's scripts: a quire standalone on a fresh data
# directory and free 127.0.0.1 ports, and quire-perf.
#   quire_start CMD...  starts CMD standalone (CMD: a binary, or "env VAR=1 binary"),
#                       waits until it accepts; sets pid, d (data dir), bp, wp (ports), U
#   quire_stop          stops it and removes its data
# The scripts take the servers to alternate as LABEL:CMD arguments.
PERF=/work/main/build-bench/tools/quire-perf
fp() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
quire_start() {
  d=$(mktemp -d /var/tmp/q30.XXXX); sync; sleep 1
  bp=$(fp); wp=$(fp)
  "$@" standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
    --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true --logLevel=warn > $d.log 2>&1 &
  pid=$!
  for k in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$bp) 2>/dev/null && break; sleep 0.05; done
  U=pulsar://127.0.0.1:$bp
}
quire_stop() { kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log; }
