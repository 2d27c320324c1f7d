#!/bin/bash
# One row of benchmarks/results/example-adaptive-demo-rows.md (the README's "A host's limit you do not know"): the
# demo against a hidden limit the scraper is not told, with only example.adaptive=true and a ceiling
# (example.pairLimit) set, and the row's figures from what the target saw (target/demo-row/<time>/hits.csv).
#
#   routes-example/demo-row.sh LIMIT BURST FACTOR [-Dexample.setting=value ...]
#   routes-example/demo-row.sh 20 10 2          # hidden 20/s burst 10, ceiling 40/1s:2, 2400 pages (20 s)
#   routes-example/demo-row.sh -- [-Dexample.setting=value ...]   # the demo with these flags only
#
# A row: the hidden limit LIMIT/s with a burst of BURST per proxy address per host (nginx's limit_req), the ceiling
# FACTOR x LIMIT (burst 1 below 10/s, 2 from there), the demo's proxies and the host limit 2.5 and 3 times the ceiling
# so that they do not bind, LIMIT x 6 x 20 pages (20 s at the hidden limit, 3 proxies x 2 hosts).
# Needs the project built here (mvn -B -o -DskipTests install); runs this clone's classes, whatever ~/.m2 holds. The demo's JVM runs at normal priority: it is the
# measurement; run other work under nice. Prints one line:
#   429s in all, 429s after 10 s, share of the hidden limit used after 10 s, time / time the limit allows, load (1 min)
# VERBOSE=1 adds per (proxy, host) pair the 429s per second of the first 20 s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cp_file="$here/target/demo-row.classpath"
if [ ! -s "$cp_file" ] || [ "$here/pom.xml" -nt "$cp_file" ]; then
  (cd "$here" && nice -n 10 mvn -B -o -q dependency:build-classpath -Dmdep.outputFile="$cp_file" >/dev/null)
fi
if [ "${1:-}" = "--" ]; then
  shift
  flags=("$@")
  # the hidden limit's pages per second, from N/1s[:burst] (the figures below assume a period of 1s)
  hidden=$(printf '%s\n' "$@" | sed -n 's/^-Dexample.demoHiddenLimit=//p'); hidden=${hidden:-20/1s}
  case "$hidden" in
    */1s|*/1s:*) limit=${hidden%%/*} ;;
    *) echo "demo-row.sh: give -Dexample.demoHiddenLimit as N/1s[:burst], was $hidden" >&2; exit 2 ;;
  esac
  pages=$(printf '%s\n' "$@" | sed -n 's/^-Dexample.demoPages=//p'); pages=${pages:-2400}
else
  limit=$1; burst=$2; factor=$3; shift 3
  ceiling=$((limit * factor)); pair_burst=$([ "$limit" -lt 10 ] && echo 1 || echo 2)
  pages=$((limit * 6 * 20))
  flags=(-Dexample.demoHiddenLimit="$limit/1s:$burst" -Dexample.demoPages="$pages"
    -Dexample.pairLimit="$ceiling/1s:$pair_burst" -Dexample.demoProxyLimit="$((ceiling * 5 / 2))/1s"
    -Dexample.hostLimit="$((ceiling * 3))/1s:6" "$@")
fi
out="$here/target/demo-row/$(date +%H%M%S)-$$"
mkdir -p "$out"
# the component from this clone, not ~/.m2's (which another clone's install may have replaced)
classpath="$here/target/classes:$here/../camel-tokenbucket/target/classes:$(sed 's#[^:]*/camel-tokenbucket-[^:/]*.jar:*##g' "$cp_file")"
java -cp "$classpath" -Dexample.outputDir="$out" -Dexample.progressInterval=0 \
  "${flags[@]}" io.tokenbucket.example.ExampleApp > "$out/run.log" 2>&1 || { tail -20 "$out/run.log"; exit 1; }
load=$(cut -d' ' -f1 /proc/loadavg)
seconds=$(sed -n 's/.* dead letters in \([0-9.]*\) s$/\1/p' "$out/run.log")
python3 - "$out/hits.csv" "$limit" "$pages" "$seconds" "$load" "${VERBOSE:-0}" "${flags[*]}" <<'PY'
import collections, sys
path, limit, pages, seconds, load, verbose, flags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4]), sys.argv[5], sys.argv[6] == "1", sys.argv[7]
rows = [l.split(",") for l in open(path).read().splitlines()[1:]]
hits = [(float(ms) / 1000, proxy, host, int(status)) for ms, proxy, host, status in rows]
windows = int(hits[-1][0]) + 1
fleet = limit * 3 * 2
full = windows - 1                      # the last window is where the queue runs dry (as Convergence)
start = 10 if full > 10 else full // 2
steady = [h for h in hits if start <= int(h[0]) < full]
refused = sum(1 for h in hits if h[3] == 429)
refused_steady = sum(1 for h in steady if h[3] == 429)
used = sum(1 for h in steady if h[3] == 200) / (max(1, full - start) * fleet)
allowed = pages / fleet
print(f"429s {100 * refused / len(hits):.1f} % ({refused} of {len(hits)}), after 10 s "
      f"{100 * refused_steady / max(1, len(steady)):.1f} % ({refused_steady}), used {100 * used:.0f} %, "
      f"time {seconds / allowed:.2f} ({seconds:.1f} s for {allowed:.0f} s), load {load} | {flags}")
if verbose:
    pairs = collections.defaultdict(lambda: [0] * min(windows, 25))
    sent = collections.defaultdict(lambda: [0] * min(windows, 25))
    for t, proxy, host, status in hits:
        if int(t) < 25:
            sent[(proxy, host)][int(t)] += 1
            if status == 429:
                pairs[(proxy, host)][int(t)] += 1
    for k in sorted(sent):
        print(f"  {k[0]} {k[1]:>16} sent/s {sent[k]}\n  {'':>19} 429/s  {pairs[k]}")
PY
