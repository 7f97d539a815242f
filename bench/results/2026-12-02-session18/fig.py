import json,sys
try: r=json.load(open(sys.argv[1]))
except Exception as e: print("no json", e); sys.exit()
p=r["publish_latency_ms"]; e=r["end_to_end_latency_ms"]
print("%.0f msg/s %.1f MB/s pub p50 %.3f p99 %.3f p99.9 %.3f max %.1f e2e p99 %.3f" % (r["produce_msg_per_s"], r["produce_mb_per_s"], p["p50"], p["p99"], p.get("p99.9",0), p.get("max",0), e["p99"]))
