#!/usr/bin/env bash
# ucx4j's comm bench beside Dask distributed's comm layer, in one run, alternating, with the same
# message shapes and iteration counts. Four columns, each two OS processes on loopback:
#   distributed-ucxx   bench/distributed_comm_bench.py --scheme ucxx  (distributed.comm over ucxx://)
#   distributed (tcp)  bench/distributed_comm_bench.py --scheme tcp   (distributed's Tornado TCP comm)
#   ucx4j ucx://       bin/ucx4j bench --comm ucx   (two JVMs)
#   ucx4j tcp://       bin/ucx4j bench --comm tcp
# all run as: --mode latency|bandwidth --frames F --size S --iters N --warmup W --json. Rows:
#   latency, 1 frame of 1 KiB, LAT_ITERS round trips (default 30000, LAT_WARMUP=3000 first;
#     10,000 ucx4j round trips last 0.4 s, too short for this VM's 3x swings between 100 ms slices): round
#     trips per second, and one-way latency p50 (half a round trip, usec)
#   bandwidth, 1 frame of 1 MiB, 16 MiB and 64 MiB: about BW_BYTES per run (default 1 GiB: 1024, 64
#     and 16 messages; a tenth of that, at least 2, first as warm-up), MB/s with MB = 2^20 bytes
# The Python side sends pre-serialized numpy frames (distributed's Serialized), so serialization
# cost is not measured; see the header of bench/distributed_comm_bench.py. Each cell is the median of
# ROUNDS runs (default 2); a run that fails shows as "failed" (its stderr tail goes to stderr) and
# makes the script exit 1 after printing the table. Prints a Markdown table with the ratio
# ucx4j ucx:// / distributed-ucxx (higher is better for round trips and MB/s, lower for latency);
# progress lines and the load average go to stderr.
#
# Environment: UCX_TLS and other UCX_* settings reach both sides (unset UCX_TLS is UCX's default; both
# use peer error handling, so on loopback UCX picks tcp, not shared memory). UCX4J_UCX=wheel (default)
# runs ucx4j on the same libucp.so as distributed-ucxx (the venv's libucx-cu13 wheel, UCX 1.21);
# UCX4J_UCX=default leaves ucx4j to find its UCX as usual; an explicit UCX4J_UCX_LIBRARY wins over
# both. On this 2-core VM UCX 1.21's default (v2) protocols move large tag messages over tcp at about
# 0.9 GB/s (its own ucx_perftest -e tag_bw, 16 MiB: 835 MB/s), UCX_PROTO_ENABLE=n (v1) at about 2.7 GB/s:
# that, not the Python layer, is what bounds distributed-ucxx's bandwidth here. UCX4J=command
# replaces bin/ucx4j. Calls bench/setup-distributed-ucxx.sh first (a venv under build-cache/, ~450 MB,
# once).
#
#   bench/vs-distributed-ucxx.sh                          # ~2-3 minutes on a 2-core VM
#   ROUNDS=3 UCX_TLS=tcp bench/vs-distributed-ucxx.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
ROUNDS=${ROUNDS:-2}
LAT_SIZE=1024
LAT_ITERS=${LAT_ITERS:-30000}
LAT_WARMUP=${LAT_WARMUP:-3000}
BW_BYTES=${BW_BYTES:-1073741824}
BW_SIZES=(1048576 16777216 67108864)
UCX4J=${UCX4J:-$ROOT/bin/ucx4j}
VENV="$ROOT/build-cache/venv-distributed-ucxx"
PY="$VENV/bin/python"
PYBENCH="$ROOT/bench/distributed_comm_bench.py"

command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 1; }
"$ROOT/bench/setup-distributed-ucxx.sh"

# Which UCX ucx4j loads.
if [ -z "${UCX4J_UCX_LIBRARY:-}" ] && [ "${UCX4J_UCX:-wheel}" = wheel ]; then
    lib=$(ls "$VENV"/lib/python3*/site-packages/libucx/lib/libucp.so 2>/dev/null | head -n 1 || true)
    [ -n "$lib" ] || { echo "vs-distributed-ucxx: libucp.so not found in $VENV (libucx-cu13)" >&2; exit 1; }
    export UCX4J_UCX_LIBRARY="$lib"
fi
UCX4J_LIB_NOTE=${UCX4J_UCX_LIBRARY:-"ucx4j's default lookup"}

RESULTS=$(mktemp)
ERRLOG=$(mktemp)
trap 'rm -f "$RESULTS" "$ERRLOG"' EXIT

# Build once, up front, so no build lands inside a measurement.
UCX4J_VERSION=$("$UCX4J" --version 2>/dev/null | head -n 1) || UCX4J_VERSION="(bin/ucx4j --version failed)"
PY_VERSIONS=$("$PY" -c '
from importlib.metadata import version
print(", ".join(f"{n} {version(n)}" for n in ("distributed", "distributed-ucxx-cu13", "ucxx-cu13", "libucx-cu13", "numpy")))')

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

record() { # record ROW COLUMN MODE JSON: appends the figures of one run's JSON line (or "failed")
    python3 -c '
import json, sys
row, col, mode, line = sys.argv[1:5]
out = lambda metric, value: print("\t".join([row, col, metric, str(value)]))
try:
    d = json.loads(line)
    got = d["mode"]
    assert got == mode, f"mode {got!r}, expected {mode!r}"
    if mode == "latency":
        out("rtps", float(d["round_trips_per_s"]))
        out("lat_p50", float(d["latency_us_p50"]))
    else:
        out("bw", float(d["bandwidth_mbps"]))
except Exception as e:
    print(f"vs-distributed-ucxx: {col} {row}: no figures in its output ({e}): {line[:300]!r}", file=sys.stderr)
    out("failed", 1)
' "$1" "$2" "$3" "$4" >>"$RESULTS"
}

one_run() { # one_run ROW COLUMN MODE command...: runs it, keeps the last JSON object of its stdout
    local row="$1" col="$2" mode="$3" out rc=0
    shift 3
    out=$("$@" 2>"$ERRLOG") || rc=$?
    # The last JSON object of stdout, one line (Python) or pretty-printed over several (ucx4j).
    out=$(awk '/^\{/ { buf = "" } { buf = buf $0 } END { print buf }' <<<"$out" | grep '^{' || true)
    if [ "$rc" -ne 0 ] || [ -z "$out" ]; then
        echo "vs-distributed-ucxx: $col $row FAILED (exit $rc): $*" >&2
        tail -n 5 "$ERRLOG" | sed 's/^/    /' >&2
        printf '%s\t%s\tfailed\t1\n' "$row" "$col" >>"$RESULTS"
        return 0
    fi
    record "$row" "$col" "$mode" "$out"
}

# row id, mode, size, iterations, warm-up
ROWS=("lat_1k latency $LAT_SIZE $LAT_ITERS $LAT_WARMUP")
for size in "${BW_SIZES[@]}"; do
    iters=$((BW_BYTES / size)); [ "$iters" -ge 4 ] || iters=4
    warmup=$((iters / 10)); [ "$warmup" -ge 2 ] || warmup=2
    ROWS+=("bw_$((size >> 20))m bandwidth $size $iters $warmup")
done

start=$(date +%s)
load_start=$(loadavg)
echo "load average at start: $load_start" >&2
for round in $(seq "$ROUNDS"); do
    for spec in "${ROWS[@]}"; do
        read -r row mode size iters warmup <<<"$spec"
        common=(--mode "$mode" --frames 1 --size "$size" --iters "$iters" --warmup "$warmup" --json)
        echo "round $round/$ROUNDS, $row: $mode, 1 x $size B, $iters iterations ($(( $(date +%s) - start )) s, load $(loadavg))" >&2
        one_run "$row" py_ucxx "$mode" "$PY" "$PYBENCH" --scheme ucxx "${common[@]}"
        one_run "$row" ucx4j_ucx "$mode" "$UCX4J" bench --comm ucx "${common[@]}"
        one_run "$row" py_tcp "$mode" "$PY" "$PYBENCH" --scheme tcp "${common[@]}"
        one_run "$row" ucx4j_tcp "$mode" "$UCX4J" bench --comm tcp "${common[@]}"
    done
done
elapsed=$(($(date +%s) - start))
load_end=$(loadavg)
echo "load average at end: $load_end" >&2

python3 - "$RESULTS" "$ROUNDS" "$elapsed" "$load_start" "$load_end" "$PY_VERSIONS" "$UCX4J_VERSION" \
    "$UCX4J_LIB_NOTE" "${UCX_TLS:-(unset)}" "${ROWS[@]}" <<'PY'
import statistics, sys
from collections import defaultdict
path, rounds, elapsed, load_start, load_end, py_versions, ucx4j_version, ucx4j_lib, tls = sys.argv[1:10]
specs = [s.split() for s in sys.argv[10:]]
cells, failed = defaultdict(list), set()
for line in open(path):
    row, col, metric, value = line.rstrip("\n").split("\t")
    if metric == "failed":
        failed.add((row, col))
    else:
        cells[(row, col, metric)].append(float(value))
cols = ["py_ucxx", "py_tcp", "ucx4j_ucx", "ucx4j_tcp"]
head = ["row", "distributed-ucxx (ucxx://)", "distributed (tcp://)", "ucx4j ucx://", "ucx4j tcp://",
        "ratio ucx4j-ucx / distributed-ucxx"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
mib = lambda n: f"{int(n) >> 20} MiB" if int(n) >= 2**20 else f"{int(n) >> 10} KiB"
for row, mode, size, iters, warmup in specs:
    metrics = ([("rtps", f"latency 1 x {mib(size)}: round trips/s", "{:.0f}"),
                ("lat_p50", f"latency 1 x {mib(size)}: one-way p50 (usec)", "{:.1f}")]
               if mode == "latency" else [("bw", f"bandwidth 1 x {mib(size)}, {iters} msgs (MB/s)", "{:.1f}")])
    for metric, label, fmt in metrics:
        med = {}
        out = [label]
        for c in cols:
            v = cells.get((row, c, metric))
            if v:
                med[c] = statistics.median(v)
                out.append(fmt.format(med[c]) + (" (some runs failed)" if (row, c) in failed else ""))
            else:
                out.append("failed" if (row, c) in failed else "-")
        py, j = med.get("py_ucxx"), med.get("ucx4j_ucx")
        out.append(f"{j / py:.2f}" if py and j is not None else "-")
        print("| " + " | ".join(out) + " |")
print()
print(f"median of {rounds} alternating runs per cell; {elapsed} s in all; load average {load_start} at the start, "
      f"{load_end} at the end. UCX_TLS={tls}. Python side: {py_versions}. ucx4j: {ucx4j_version}, UCX from "
      f"{ucx4j_lib}. Latency: one-way (half a round trip), usec; bandwidth: payload MB/s, MB = 2^20 bytes. "
      "ratio = ucx4j ucx:// / distributed-ucxx (round trips and bandwidth: higher is better; latency: lower is better).")
sys.exit(1 if failed else 0)
PY
