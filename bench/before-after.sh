#!/usr/bin/env bash
# The same host benchmarks with two builds of ucx4j, alternating, in one run: did a change make a hot path
# slower? BEFORE and AFTER are folders of jars (a module path: the CLI and its dependencies). Rows:
# core tag 8 B latency (caller and thread-blocking progress), core tag 8 B message rate, core tag 64 MiB
# bandwidth, comm ucx:// 1 KiB round trips and 1 MiB bandwidth, and the 1 KiB one-way latency of the core's
# tag and of the comm side by side (thread-blocking; their ratio is issue 15's comm round-trip figure);
# last the core's tag at 1 MiB and the comm at 64 MiB (with tag_bw_64Mi and comm_ucx_1MiB: issue 15's
# comm bandwidth figures, comm against tag at 1 and 64 MiB). Each
# cell is the median of ROUNDS runs (default 3). Units: latency one-way usec (p50); bandwidth MB/s (MB = 2^20 B); rate messages/s.
#
#   BEFORE=/path/to/old/jars AFTER=/path/to/new/jars bench/before-after.sh
#   ROUNDS=5 ONLY="comm_ucx_1KiB" BEFORE=... AFTER=... bench/before-after.sh     # some rows
#   (on a GPU machine: bin/gpu-run shell env BEFORE=.gpu/baseline AFTER=.gpu/modules bench/before-after.sh)
#   PEH=off ITERS=50 ...    peer error handling off (shared memory, as issue 15's core targets), and 50
#                           times the iterations of each row (longer runs, for the bimodal small-message rows)
#   BENCH_JAVA_OPTS="-Xms1g -Xmx1g -XX:+AlwaysPreTouch" ...   JVM options for every ucx4j run (the bench server
#                           gets the heap, collector and processor ones too: docs/CONFIGURATION.md, "Small messages")
#   PERFTEST=1 ...          ucx_perftest's 8-byte tag_lat (p50, one-way usec) once a round too, the same transports
#                           (ucx_perftest on PATH or UCX_PERFTEST), and each latency row's median against its median
# Sides alternate: BEFORE first in odd rounds, AFTER first in even ones.
# With OUT set, every run's JSON is appended, one line each, to $OUT/before-after.jsonl.
set -euo pipefail
: "${BEFORE:?BEFORE=<folder of jars>}" "${AFTER:?AFTER=<folder of jars>}"
ROUNDS=${ROUNDS:-3}
JAVA=${JAVA:-java}
ITERS=${ITERS:-1}
if [ "${PEH:-on}" = off ]; then
    export UCX4J__PEER_ERROR_HANDLING=false
fi
ROWS=(
    "tag_lat_caller|--op tag --mode latency --size 8 --iters $((20000 * ITERS)) --progress caller|latency_us_p50"
    "tag_lat_blocking|--op tag --mode latency --size 8 --iters $((20000 * ITERS))|latency_us_p50"
    "tag_lat_polling|--op tag --mode latency --size 8 --iters $((20000 * ITERS)) --progress thread-polling|latency_us_p50"
    "tag_rate|--op tag --mode rate --size 8 --iters $((200000 * ITERS))|msg_rate"
    "tag_bw_64Mi|--op tag --mode bandwidth --size 67108864 --iters $((20 * ITERS))|bandwidth_mbps"
    "comm_ucx_1KiB|--comm ucx --mode latency --size 1024 --iters $((20000 * ITERS))|round_trips_per_s"
    "tag_lat_1KiB|--op tag --mode latency --size 1024 --iters $((20000 * ITERS))|latency_us_p50"
    "comm_lat_1KiB|--comm ucx --mode latency --size 1024 --iters $((20000 * ITERS))|latency_us_p50"
    "comm_ucx_1MiB|--comm ucx --mode bandwidth --size 1048576 --iters $((2000 * ITERS))|bandwidth_mbps"
    "tag_bw_1Mi|--op tag --mode bandwidth --size 1048576 --iters $((2000 * ITERS))|bandwidth_mbps"
    "comm_ucx_64MiB|--comm ucx --mode bandwidth --size 67108864 --iters $((20 * ITERS))|bandwidth_mbps"
)
if [ -n "${ONLY:-}" ]; then   # ONLY="comm_ucx_1KiB tag_rate": just these rows
    KEEP=()
    for row in "${ROWS[@]}"; do
        for id in $ONLY; do [ "${row%%|*}" = "$id" ] && KEEP+=("$row"); done
    done
    [ ${#KEEP[@]} -gt 0 ] || { echo "ONLY=$ONLY names no row" >&2; exit 2; }
    ROWS=("${KEEP[@]}")
fi
run() { # run JARS ARGS FIELD -> the figure, or empty
    local out
    # shellcheck disable=SC2086 # ARGS and BENCH_JAVA_OPTS are word lists
    out=$(timeout -k 5 120 "$JAVA" ${BENCH_JAVA_OPTS:-} --enable-native-access=org.ucx4j.core,org.ucx4j.cuda -p "$1" \
        -m org.ucx4j.cli/org.ucx4j.cli.Main bench $2 --warmup-time 2 --json 2>/dev/null) || true
    if [ -n "${OUT:-}" ] && [ -n "$out" ]; then
        python3 -c 'import json,sys; print(json.dumps({"jars": sys.argv[2], "args": sys.argv[3], "result": json.loads(sys.argv[1])}))' \
            "$out" "$1" "$2" >>"$OUT/before-after.jsonl" 2>/dev/null || true
    fi
    python3 -c 'import json,sys
try:
    d = json.loads(sys.argv[1]); v = d.get(sys.argv[2])
    if v is None and sys.argv[2] == "round_trips_per_s" and d.get("latency_us_avg"):
        v = 1e6 / (2 * d["latency_us_avg"])
    print("" if v is None else v)
except Exception:
    print("")' "$out" "$3"
}
declare -A FIG
PT=""
if [ "${PERFTEST:-0}" = 1 ]; then
    # shellcheck source=bench/lib.sh
    source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
fi
for r in $(seq "$ROUNDS"); do
    if [ "${PERFTEST:-0}" = 1 ]; then
        pt=$(bench_perftest "" "" "" "-t tag_lat -s 8 -n 1000000" | cut -d, -f2 | tr -d ' ')
        PT+="$pt "
        echo "round $r/$ROUNDS ucx_perftest tag_lat 8 B: $pt" >&2
    fi
    sides="BEFORE AFTER"
    [ $((r % 2)) = 1 ] || sides="AFTER BEFORE"
    for row in "${ROWS[@]}"; do
        IFS='|' read -r id args field <<<"$row"
        for side in $sides; do
            echo "round $r/$ROUNDS $id $side (load $(cut -d' ' -f1 /proc/loadavg))" >&2
            FIG[$id,$side]+="$(run "${!side}" "$args" "$field") "
        done
    done
done
echo "| row | metric | before (median) | after (median) | after / before | all before | all after |"
echo "|---|---|---|---|---|---|---|"
for row in "${ROWS[@]}"; do
    IFS='|' read -r id args field <<<"$row"
    python3 - "$id" "$field" "${FIG[$id,BEFORE]}" "${FIG[$id,AFTER]}" <<'PY'
import statistics, sys
rid, field, b, a = sys.argv[1:]
bs = [float(x) for x in b.split()]
as_ = [float(x) for x in a.split()]
mb = statistics.median(bs) if bs else None
ma = statistics.median(as_) if as_ else None
ratio = f"{ma / mb:.2f}" if mb and ma else "-"
f = lambda v: "-" if v is None else f"{v:,.3f}" if v < 100 else f"{v:,.0f}"
print(f"| {rid} | {field} | {f(mb)} | {f(ma)} | {ratio} | {' '.join(f(x) for x in bs)} | {' '.join(f(x) for x in as_)} |")
PY
done
# Issue 15's comm figures where both rows of a pair ran: comm against the core's tag, per side, from
# the medians (round trips: tag latency over comm latency; bandwidth: comm over tag).
PAIRS=""
for pair in "tag_lat_1KiB comm_lat_1KiB" "comm_ucx_1MiB tag_bw_1Mi" "comm_ucx_64MiB tag_bw_64Mi"; do
    read -r num den <<<"$pair"
    for side in BEFORE AFTER; do
        PAIRS+="$num/$den $side ${FIG[$num,$side]:-}|${FIG[$den,$side]:-};"
    done
done
python3 - "$PAIRS" <<'PY'
import statistics, sys
lines = []
for item in sys.argv[1].split(";"):
    if not item.strip():
        continue
    head, _, figs = item.partition(" ")
    side, _, figs = figs.partition(" ")
    num, den = (s.split() for s in figs.split("|"))
    if num and den:
        n, d = statistics.median(map(float, num)), statistics.median(map(float, den))
        lines.append(f"| {head} | {side.lower()} | {n / d:.2f} |")
if lines:
    print()
    print("| issue 15 ratio (medians) | side | ratio |")
    print("|---|---|---|")
    print("\n".join(lines))
PY
if [ -n "$PT" ]; then
    echo
    python3 - "$PT" <<'PY'
import statistics, sys
pt = [float(x) for x in sys.argv[1].split() if x.replace(".", "", 1).isdigit()]
if pt:
    print(f"ucx_perftest tag_lat 8 B p50: median {statistics.median(pt):.3f} usec (rounds: {' '.join(f'{x:.3f}' for x in pt)});"
          " divide a latency row's median by it for the ratio issue 15 names")
PY
fi
