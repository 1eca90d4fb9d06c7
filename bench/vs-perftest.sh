#!/usr/bin/env bash
# ucx4j pingpong beside ucx_perftest, in one run, alternating, with the same sizes, iteration counts
# and UCX_TLS:
#   tag_lat: 8 bytes, 20000 round trips        (ucx_perftest -t tag_lat -s 8 -n 20000)
#   tag_bw:  64 MiB, 100 messages              (ucx_perftest -t tag_bw -s 67108864 -n 100)
# for UCX_TLS unset (UCX's default) and UCX_TLS=tcp; ucx4j in its default progress mode
# (thread-blocking) and in caller mode (the caller polls, as ucx_perftest does). Each cell is the
# median of ROUNDS runs (default 3). Prints a table with the ratio ucx4j / ucx_perftest.
#
# Units as ucx_perftest prints them: latency is one-way (half a round trip) in usec; bandwidth is
# MB/s with MB = 2^20 bytes. Needs ucx_perftest (apt: ucx-utils) and python3.
#
#   bench/vs-perftest.sh            # ~2 minutes on a 2-core VM
#   ROUNDS=5 bench/vs-perftest.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
ROUNDS=${ROUNDS:-3}
LAT_SIZE=8
LAT_ITERS=20000
BW_SIZE=67108864
BW_ITERS=100
TLS_LIST=("default" "tcp")
PORT=$((20000 + RANDOM % 10000))

command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found: run bin/setup-ucx (apt: ucx-utils)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed to parse the results" >&2; exit 1; }

RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT

# Build once, up front, so no build lands inside a measurement.
"$ROOT/bin/ucx4j" --version >/dev/null

with_tls() { # with_tls TLS command...: runs the command with UCX_TLS set, or unset for "default"
    local tls="$1"; shift
    if [ "$tls" = default ]; then env -u UCX_TLS "$@"; else env UCX_TLS="$tls" "$@"; fi
}

wait_listening() { # wait_listening PORT: until something listens there (at most 5 s)
    for _ in $(seq 50); do
        if command -v ss >/dev/null && ss -ltn 2>/dev/null | grep -q ":$1 "; then return 0; fi
        command -v ss >/dev/null || { sleep 1; return 0; }
        sleep 0.1
    done
}

perftest() { # perftest TLS TEST SIZE ITERS: one client/server pair; appends its figures
    local tls="$1" test="$2" size="$3" iters="$4" out server
    PORT=$((PORT + 1))
    with_tls "$tls" ucx_perftest -p "$PORT" >/dev/null 2>&1 &
    server=$!
    wait_listening "$PORT"
    # -v: CSV; last line: iterations,p50_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
    out=$(with_tls "$tls" ucx_perftest 127.0.0.1 -p "$PORT" -t "$test" -s "$size" -n "$iters" -v 2>&1 | tail -n 1)
    wait "$server" || true
    IFS=, read -r _ p50 _ overall _ bw _ _ <<<"$out"
    if [ "$test" = tag_lat ]; then
        printf '%s\t%s\tucx_perftest\tlat_p50\t%s\n%s\t%s\tucx_perftest\tlat_avg\t%s\n' \
            "$tls" "$test" "$p50" "$tls" "$test" "$overall" >>"$RESULTS"
    else
        printf '%s\t%s\tucx_perftest\tbw\t%s\n' "$tls" "$test" "$bw" >>"$RESULTS"
    fi
}

ucx4j() { # ucx4j TLS MODE SIZE ITERS PROGRESS: one pingpong (two JVMs); appends its figures
    local tls="$1" mode="$2" size="$3" iters="$4" progress="$5" json
    json=$(with_tls "$tls" "$ROOT/bin/ucx4j" pingpong --mode "$mode" --size "$size" --iters "$iters" \
        --progress "$progress" --json --no-progress-bar)
    python3 -c '
import json, sys
tls, progress, d = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
row = lambda metric, value: print("\t".join([tls, d["op"], "ucx4j " + progress, metric, str(value)]))
if d["mode"] == "latency":
    row("lat_p50", d["latency_us_p50"])
    row("lat_avg", d["latency_us_avg"])
else:
    row("bw", d["bandwidth_mbps"])
' "$tls" "$progress" "$json" >>"$RESULTS"
}

start=$(date +%s)
for round in $(seq "$ROUNDS"); do
    for tls in "${TLS_LIST[@]}"; do
        echo "round $round/$ROUNDS, UCX_TLS=$tls" >&2
        perftest "$tls" tag_lat "$LAT_SIZE" "$LAT_ITERS"
        ucx4j "$tls" latency "$LAT_SIZE" "$LAT_ITERS" thread-blocking
        ucx4j "$tls" latency "$LAT_SIZE" "$LAT_ITERS" caller
        perftest "$tls" tag_bw "$BW_SIZE" "$BW_ITERS"
        ucx4j "$tls" bandwidth "$BW_SIZE" "$BW_ITERS" thread-blocking
        ucx4j "$tls" bandwidth "$BW_SIZE" "$BW_ITERS" caller
    done
done
elapsed=$(($(date +%s) - start))

python3 - "$RESULTS" "$ROUNDS" "$elapsed" <<'PY'
import statistics, sys
from collections import defaultdict
path, rounds, elapsed = sys.argv[1], sys.argv[2], sys.argv[3]
cells = defaultdict(list)
for line in open(path):
    tls, test, tool, metric, value = line.rstrip("\n").split("\t")
    cells[(tls, test, metric, tool)].append(float(value))
med = {k: statistics.median(v) for k, v in cells.items()}
rows = []
for tls in ("default", "tcp"):
    for test, metric, label in (("tag_lat", "lat_p50", "latency p50 (usec)"),
                                ("tag_lat", "lat_avg", "latency avg (usec)"),
                                ("tag_bw", "bw", "bandwidth (MB/s)")):
        pt = med.get((tls, test, metric, "ucx_perftest"))
        blk = med.get((tls, test, metric, "ucx4j thread-blocking"))
        cal = med.get((tls, test, metric, "ucx4j caller"))
        size = "8" if test == "tag_lat" else "67108864"
        ratio = lambda x: f"{x / pt:.2f}" if pt and x is not None else "-"
        rows.append((tls, test, size, label, f"{pt:.3f}" if pt is not None else "-",
                     f"{blk:.3f}", ratio(blk), f"{cal:.3f}", ratio(cal)))
head = ("UCX_TLS", "test", "size (B)", "metric", "ucx_perftest", "ucx4j blocking", "ratio", "ucx4j caller", "ratio")
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print(f"median of {rounds} alternating runs per cell; {elapsed} s in all. "
      "Latency: one-way (half a round trip), usec; bandwidth: MB/s, MB = 2^20 bytes. "
      "ratio = ucx4j / ucx_perftest (latency: lower is better; bandwidth: higher is better).")
PY
