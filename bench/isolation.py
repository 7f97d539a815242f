#!/usr/bin/env python3
"""Tenant isolation under a flood: does tenant B keep its throughput and latency
when tenant A offers 10x its publish quota on the same broker?

Starts one `quire standalone` (journalSyncData=true), makes tenants A and B through
REST, gives A's namespace a publish quota (publishRate, msg/s), then runs rounds.
Each round measures tenant B (quire-perf, fixed rate, unbatched, latency from each
message's scheduled send time) twice, once alone and once while A's quire-perf
producers offer --flood-factor times A's quota; the order alternates between rounds
so that slow drifts of the machine (other jobs, the disk's fsync stalls) fall on both
sides alike. It prints every run and then, per figure, the median over rounds of
each side and their ratio.

Not a test: the figures depend on the machine. docs/broker.md records what it
measured.

Usage: bench/isolation.py [--build build] [--rounds 6] [--seconds 10] [--rate-b 500]
                          [--quota 200] [--flood-factor 10]
"""
import argparse, json, os, statistics, sys, tempfile, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import Perf, Quire, log  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGS = ["msg_s", "p50", "p95", "p99", "p99.9"]


def rest(wport, method, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (wport, path), method=method,
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def figures(r):
    lat = r.get("publish_latency_ms", {})
    return {"msg_s": r.get("produce_msg_per_s", 0.0), "p50": lat.get("p50"),
            "p95": lat.get("p95"), "p99": lat.get("p99"), "p99.9": lat.get("p99.9"),
            "errors": r.get("send_errors", -1), "exit": r.get("exit_status")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rate-b", type=int, default=500, help="tenant B's fixed rate, msg/s")
    ap.add_argument("--quota", type=int, default=200, help="tenant A's publish quota, msg/s")
    ap.add_argument("--flood-factor", type=int, default=10)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--out", default=None, help="directory for raw runs (default: a temp dir)")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="isolation.")
    os.makedirs(out, exist_ok=True)
    perf = Perf(a.build, out)
    q = Quire(a.build, out).start()
    try:
        for t in ("tenant-a", "tenant-b"):
            rest(q.wport, "PUT", "/admin/v2/tenants/" + t,
                 {"adminRoles": [], "allowedClusters": ["standalone"]})
            rest(q.wport, "PUT", "/admin/v2/namespaces/%s/ns" % t, {})
        rest(q.wport, "POST", "/admin/v2/namespaces/tenant-a/ns/publishRate",
             {"publishThrottlingRateInMsg": a.quota, "publishThrottlingRateInByte": -1})
        topic_a = "persistent://tenant-a/ns/flood"
        topic_b = "persistent://tenant-b/ns/steady"
        b_args = ["--topics", topic_b, "--no-partitions", "--rate", a.rate_b, "--size", a.size,
                  "--disable-batching", "--max-pending", 1000, "--warmup-seconds", 2,
                  "--seconds", a.seconds]
        a_args = ["--topics", topic_a, "--no-partitions", "--producers-per-topic", 4,
                  "--rate", a.quota * a.flood_factor, "--size", a.size, "--disable-batching",
                  "--max-pending", 100, "--warmup-seconds", 0, "--seconds", a.seconds + 6]
        runs = {"alone": [], "flood": []}
        admitted = []
        for r in range(a.rounds):
            order = ("alone", "flood") if r % 2 == 0 else ("flood", "alone")
            for side in order:
                flood = None
                if side == "flood":
                    flood = perf.start("produce", q.url, a_args, "a-flood-r%d" % r)
                    time.sleep(2)  # A is publishing and held to its quota
                fb = figures(perf.run("produce", q.url, b_args, "b-%s-r%d" % (side, r),
                                      a.seconds + 60))
                if flood:
                    fa = Perf.finish(flood, a.seconds + 60)
                    admitted.append(fa.get("produce_msg_per_s", 0.0))
                    log("round %d A offered %d msg/s, admitted %.1f msg/s, errors %s" %
                        (r, a.quota * a.flood_factor, admitted[-1], fa.get("send_errors")))
                log("round %d B %-5s %s  load %s" % (r, side, fb, open("/proc/loadavg").read().split()[0]))
                runs[side].append(fb)
    finally:
        q.stop()

    print("\n## Tenant isolation: B at %d msg/s (%d B, unbatched) alone vs next to A offering "
          "%d x its quota of %d msg/s; %d rounds of %d s, medians over rounds" %
          (a.rate_b, a.size, a.flood_factor, a.quota, a.rounds, a.seconds))
    print("A admitted (median): %.1f msg/s" % statistics.median(admitted))
    print("| B figure | alone | next to the flood | flood / alone |")
    print("|---|---|---|---|")
    for k in FIGS:
        al = statistics.median(x[k] for x in runs["alone"])
        fl = statistics.median(x[k] for x in runs["flood"])
        print("| %s | %.3f | %.3f | %.3f |" % (k if k == "msg_s" else "publish " + k + " ms",
                                                al, fl, fl / al if al else float("nan")))
    errs = sum(max(x["errors"], 0) for s in runs.values() for x in s)
    print("B send errors: %d; raw runs in %s" % (errs, out))


if __name__ == "__main__":
    main()
