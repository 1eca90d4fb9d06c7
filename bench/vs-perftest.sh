#!/usr/bin/env bash
# ucx4j bench beside ucx_perftest, in one run, alternating, with the same sizes, iteration counts and
# UCX_TLS. Rows (ucx_perftest test; ucx4j bench options):
#   tag latency, 8 B, 20000 round trips     tag_lat             --op tag    --mode latency
#   tag bandwidth, 64 MiB, 10 messages      tag_bw              --op tag    --mode bandwidth
#   stream bandwidth, 64 MiB                stream_bw           --op stream --mode bandwidth
#   put bandwidth, 64 MiB                   ucp_put_bw          --op put    --mode bandwidth
#   get bandwidth, 64 MiB                   ucp_get             --op get    --mode bandwidth
#   am bandwidth, 64 MiB                    ucp_am_bw           --op am     --mode bandwidth
#   tag message rate, 8 B, 200000 messages  tag_bw -s 8         --op tag    --mode rate
# (ucx_perftest -s SIZE -n ITERS, all else at its defaults), for UCX_TLS unset (UCX's default) and
# UCX_TLS=tcp; ucx4j in its default progress mode (thread-blocking) and, for the latency and rate rows,
# in caller mode too (the caller polls, as ucx_perftest does; BW_PROGRESS_MODES adds it to the 64 MiB
# rows, at about a minute more). Each cell is the median of ROUNDS runs (default 2). Prints a table with
# the ratio ucx4j / ucx_perftest; progress lines and the load average go to stderr.
#
# Units as ucx_perftest prints them: latency is one-way (half a round trip) in usec; bandwidth is
# MB/s with MB = 2^20 bytes; message rate in messages per second. Needs ucx_perftest (apt: ucx-utils)
# and python3.
#
#   bench/vs-perftest.sh                                  # ~5-7 minutes on a 2-core VM
#   ROUNDS=3 BW_PROGRESS_MODES="thread-blocking caller" bench/vs-perftest.sh
#   ROUNDS=5 ONLY="stream_bw get_bw" TLS=tcp bench/vs-perftest.sh   # some rows, some UCX_TLS
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
ROUNDS=${ROUNDS:-2}
LAT_SIZE=8
LAT_ITERS=20000
BW_SIZE=67108864
BW_ITERS=${BW_ITERS:-10}
RATE_SIZE=8
RATE_ITERS=200000
read -r -a TLS_LIST <<<"${TLS:-default tcp}"
read -r -a PROGRESS <<<"${PROGRESS_MODES:-thread-blocking caller}"
read -r -a BW_PROGRESS <<<"${BW_PROGRESS_MODES:-${PROGRESS[0]}}"
# row id, ucx_perftest test, ucx4j op, ucx4j mode, size, iterations
ROWS=(
    "tag_lat tag_lat tag latency $LAT_SIZE $LAT_ITERS"
    "tag_bw tag_bw tag bandwidth $BW_SIZE $BW_ITERS"
    "stream_bw stream_bw stream bandwidth $BW_SIZE $BW_ITERS"
    "put_bw ucp_put_bw put bandwidth $BW_SIZE $BW_ITERS"
    "get_bw ucp_get get bandwidth $BW_SIZE $BW_ITERS"
    "am_bw ucp_am_bw am bandwidth $BW_SIZE $BW_ITERS"
    "tag_rate tag_bw tag rate $RATE_SIZE $RATE_ITERS"
)
if [ -n "${ONLY:-}" ]; then   # ONLY="stream_bw get_bw": just these rows
    KEEP=()
    for row in "${ROWS[@]}"; do
        for id in $ONLY; do [ "${row%% *}" = "$id" ] && KEEP+=("$row"); done
    done
    [ ${#KEEP[@]} -gt 0 ] || { echo "ONLY=$ONLY names no row (rows: tag_lat tag_bw stream_bw put_bw get_bw am_bw tag_rate)" >&2; exit 2; }
    ROWS=("${KEEP[@]}")
fi

# ucx4j endpoints detect peer failure by default (UCP_ERR_HANDLING_MODE_PEER), and UCX then uses only
# transports that can (tcp, not shared memory, on UCX 1.13): ucx_perftest gets -e so both sides run
# over the same transports. PERFTEST_FLAGS= (empty) compares against perftest without it.
PERFTEST_FLAGS=${PERFTEST_FLAGS--e}
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

perftest() { # perftest TLS ROW TEST SIZE ITERS: one client/server pair; appends its figures
    local tls="$1" row="$2" test="$3" size="$4" iters="$5" out tls_env="UCX_TLS=$1"
    [ "$tls" = default ] && tls_env="-u UCX_TLS"
    out=$(bench_perftest "$tls_env" "$tls_env" "$PERFTEST_FLAGS" "-t $test -s $size -n $iters $PERFTEST_FLAGS")
    IFS=, read -r _ p50 _ overall _ bw _ mr <<<"$out"
    case "$row" in
        tag_lat) printf '%s\t%s\tucx_perftest\tlat_p50\t%s\n%s\t%s\tucx_perftest\tlat_avg\t%s\n' \
                     "$tls" "$row" "$p50" "$tls" "$row" "$overall" >>"$RESULTS" ;;
        tag_rate) printf '%s\t%s\tucx_perftest\tmr\t%s\n' "$tls" "$row" "$mr" >>"$RESULTS" ;;
        *) printf '%s\t%s\tucx_perftest\tbw\t%s\n' "$tls" "$row" "$bw" >>"$RESULTS" ;;
    esac
}

ucx4j() { # ucx4j TLS ROW OP MODE SIZE ITERS PROGRESS: one bench run (two JVMs); appends its figures
    local tls="$1" row="$2" op="$3" mode="$4" size="$5" iters="$6" progress="$7" json
    json=$(with_tls "$tls" "$ROOT/bin/ucx4j" bench --op "$op" --mode "$mode" --size "$size" --iters "$iters" \
        --progress "$progress" --json --no-progress-bar)
    python3 -c '
import json, sys
tls, row, progress, d = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = lambda metric, value: print("\t".join([tls, row, "ucx4j " + progress, metric, str(value)]))
if d["mode"] == "latency":
    out("lat_p50", d["latency_us_p50"])
    out("lat_avg", d["latency_us_avg"])
elif d["mode"] == "rate":
    out("mr", d["msg_rate"])
else:
    out("bw", d["bandwidth_mbps"])
' "$tls" "$row" "$progress" "$json" >>"$RESULTS"
}

start=$(date +%s)
load_start=$(bench_loadavg)
echo "load average at start: $load_start" >&2
for round in $(seq "$ROUNDS"); do
    for tls in "${TLS_LIST[@]}"; do
        for spec in "${ROWS[@]}"; do
            read -r row test op mode size iters <<<"$spec"
            echo "round $round/$ROUNDS, UCX_TLS=$tls, $row ($(( $(date +%s) - start )) s, load $(bench_loadavg))" >&2
            perftest "$tls" "$row" "$test" "$size" "$iters"
            modes=("${PROGRESS[@]}")
            [ "$mode" = bandwidth ] && modes=("${BW_PROGRESS[@]}")
            for p in "${modes[@]}"; do
                ucx4j "$tls" "$row" "$op" "$mode" "$size" "$iters" "$p"
            done
        done
    done
done
elapsed=$(($(date +%s) - start))
load_end=$(bench_loadavg)
echo "load average at end: $load_end" >&2

python3 - "$RESULTS" "$ROUNDS" "$elapsed" "$load_start" "$load_end" "${PROGRESS[@]}" "${BW_PROGRESS[@]}" <<'PY'
import statistics, sys
from collections import defaultdict
path, rounds, elapsed, load_start, load_end = sys.argv[1:6]
progress = list(dict.fromkeys(sys.argv[6:]))  # the columns: every progress mode run, in order
cells = defaultdict(list)
for line in open(path):
    tls, row, tool, metric, value = line.rstrip("\n").split("\t")
    cells[(tls, row, metric, tool)].append(float(value))
med = {k: statistics.median(v) for k, v in cells.items()}
rows = []
for tls in ("default", "tcp"):
    for row, test, size, metric, label in (
            ("tag_lat", "tag_lat", "8", "lat_p50", "tag latency p50 (usec)"),
            ("tag_lat", "tag_lat", "8", "lat_avg", "tag latency avg (usec)"),
            ("tag_bw", "tag_bw", "67108864", "bw", "tag bandwidth (MB/s)"),
            ("stream_bw", "stream_bw", "67108864", "bw", "stream bandwidth (MB/s)"),
            ("put_bw", "ucp_put_bw", "67108864", "bw", "put bandwidth (MB/s)"),
            ("get_bw", "ucp_get", "67108864", "bw", "get bandwidth (MB/s)"),
            ("am_bw", "ucp_am_bw", "67108864", "bw", "am bandwidth (MB/s)"),
            ("tag_rate", "tag_bw", "8", "mr", "tag message rate (msg/s)")):
        pt = med.get((tls, row, metric, "ucx_perftest"))
        if pt is None and not any((tls, row, metric, "ucx4j " + p) in med for p in progress):
            continue  # not run (ONLY, TLS)
        fmt = (lambda x: f"{x:.0f}") if metric == "mr" else (lambda x: f"{x:.3f}" if metric != "bw" else f"{x:.2f}")
        cols = [tls, test, size, label, fmt(pt) if pt is not None else "-"]
        for p in progress:
            x = med.get((tls, row, metric, "ucx4j " + p))
            cols.append(fmt(x) if x is not None else "-")
            cols.append(f"{x / pt:.2f}" if pt and x is not None else "-")
        rows.append(cols)
head = ["UCX_TLS", "perftest test", "size (B)", "metric", "ucx_perftest"]
for p in progress:
    head += ["ucx4j " + p, "ratio"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print(f"median of {rounds} alternating runs per cell; {elapsed} s in all; load average {load_start} at the start, "
      f"{load_end} at the end. Latency: one-way (half a round trip), usec; bandwidth: MB/s, MB = 2^20 bytes; "
      "message rate: messages per second. ratio = ucx4j / ucx_perftest (latency: lower is better; "
      "bandwidth and rate: higher is better).")
PY
