#!/bin/bash
# usage: scrape.sh OUTFILE: every second, selected /metrics lines of the running
# `quire standalone` (found by its command line), for 400 s at most
out=$1; : > $out
end=$((SECONDS+400))
while [ $SECONDS -lt $end ]; do
  pid=$(pgrep -f "quire standalone --data-dir" | head -1)
  if [ -n "$pid" ]; then
    wp=$(tr '\0' '\n' < /proc/$pid/cmdline | sed -n 's/--webServicePort=//p')
    m=$(curl -s -m 5 localhost:$wp/metrics | grep -E "^quire_bookie_(adds_waited_total|write_cache_bytes|flush_stalls_total|reads_yielded_total|direct_bytes_total|gc_logs_removed_total|gc_compacted_bytes_total|spare_files_taken_total|spare_journal_files_reused_total)|^bookie_journal_JOURNAL_SYNC_count|^bookie_journal_JOURNAL_ADD_ENTRY\{success=\"true\",quantile=\"0.99\"" | tr '\n' ' ')
    echo "$(date +%T) $m" >> $out
  fi
  sleep 1
done
