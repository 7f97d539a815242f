# pattern-sub.py PORT: every 5 s (5 times) a regex consumer subscribes to public/default with a
# pattern that matches no topic (the client asks the broker for the namespace's topics,
# GetTopicsOfNamespace: 100,001 names at 100,000 topics), then closes; prints each time.
import re, sys, time
import pulsar
c = pulsar.Client(f"pulsar://127.0.0.1:{sys.argv[1]}", logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
for k in range(5):
    time.sleep(5)
    t = time.time()
    cons = c.subscribe(re.compile("persistent://public/default/nomatch-.*"), f"s{k}")
    print(f"subscribe {time.time() - t:.3f} s", flush=True)
    cons.close()
c.close()
