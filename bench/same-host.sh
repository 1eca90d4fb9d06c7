#!/usr/bin/env bash
# Same-host ucx:// with dead-peer detection (issue 15, item 4): ucx:// with the defaults
# (same-host-shared-memory=true: each process pair on workers kept for each other, on UCX's shared memory
# transports told to report peer failure; the handshake socket reports a death at once), ucx:// with
# same-host-shared-memory=false (the shared worker: with peer error handling UCX keeps to tcp) and tcp://,
# alternating in one run, each cell the median of ROUNDS runs (default 3); and 1 KiB round trips. The detection time after
# kill -9 is printed by SameHostDeadPeerTest (docs/BENCHMARKS.md says how).
#
# Units: bandwidth MB/s (MB = 2^20 bytes), window 16; round trips per second.
#
#   bench/same-host.sh                        # ~3 minutes on a 2-core VM
#   ROUNDS=5 SIZES="1Mi 64Mi" bench/same-host.sh
#   UCX4J_UCX_LIBRARY=/path/to/libucp.so bench/same-host.sh   # another UCX (the pip wheel's 1.22)
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
ROUNDS=${ROUNDS:-3}
LAT_ITERS=${LAT_ITERS:-20000}
read -r -a SIZES <<<"${SIZES:-1Mi 64Mi}"
UCX4J="$ROOT/bin/ucx4j"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

"$UCX4J" --version >/dev/null   # builds once, before anything is timed
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# Rows (ROWS, default "on off tcp"; each with its own environment):
#   on       ucx:// with the defaults
#   off      ucx:// with same-host-shared-memory=false (UCX on tcp)
#   tcp      tcp://
#   cma      ucx:// defaults and UCX_CMA_MEMORY_INVALIDATE=y (UCX then reads bulk data from the sender
#            with cma, process_vm_readv, instead of copying it through the shared segments)
#   nocma    ucx:// defaults and UCX_CMA_MEMORY_INVALIDATE=n
#   base     ucx:// defaults of the jars in $BASELINE (a folder of module jars, as UCX4J_PREBUILT takes:
#            bin/gpu-pack's .gpu/modules of an earlier commit), for before/after in one run
# PERFTEST=1 (default when ucx_perftest is on PATH) adds ucx_perftest tag_bw -e on the same-host
# worker's transports and settings (UCX_TLS=sysv,cma, *_ERROR_HANDLING=y, PERFTEST_MM: by default the
# segment size, FIFO length and allocation chunk SameHost.java sets) to each bandwidth round, once as is
# and, with the cma or nocma row, once with UCX_CMA_MEMORY_INVALIDATE=y / n. (ucx_perftest does not check
# what it received: with a setting UCX mishandles it may report figures for data it never moved.)
read -r -a ROW_NAMES <<<"${ROWS:-on off tcp}"
PERFTEST_MM=${PERFTEST_MM-UCX_SYSV_SEG_SIZE=32832 UCX_SYSV_FIFO_SIZE=256 UCX_SYSV_RX_BUFS_GROW=264}
if [ -z "${PERFTEST:-}" ]; then
    if command -v "${UCX_PERFTEST:-ucx_perftest}" >/dev/null 2>&1; then PERFTEST=1; else PERFTEST=0; fi
fi
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

# row_env ROW: the environment words of a row; row_comm ROW: its --comm.
row_env() {
    case $1 in
        on) echo "UCX4J__SAME_HOST_SHARED_MEMORY=true" ;;
        off) echo "UCX4J__SAME_HOST_SHARED_MEMORY=false" ;;
        tcp) echo "UCX4J__SAME_HOST_SHARED_MEMORY=true" ;;
        cma) echo "UCX4J__SAME_HOST_SHARED_MEMORY=true UCX_CMA_MEMORY_INVALIDATE=y" ;;
        nocma) echo "UCX4J__SAME_HOST_SHARED_MEMORY=true UCX_CMA_MEMORY_INVALIDATE=n" ;;
        base) echo "UCX4J_PREBUILT=${BASELINE:?BASELINE (a folder of jars) for the base row} UCX4J__SAME_HOST_SHARED_MEMORY=true" ;;
        *) echo "unknown row $1 (on, off, tcp, cma, nocma, base)" >&2; exit 2 ;;
    esac
}
row_comm() { if [ "$1" = tcp ]; then echo tcp; else echo ucx; fi; }

# run NAME ROW ARGS...: one `ucx4j bench` in ROW's environment; appends its figure to $OUT/NAME.
run() {
    local name=$1 row=$2 json
    shift 2
    # shellcheck disable=SC2046 # the row's environment is a word list
    if ! json=$(env $(row_env "$row") "$UCX4J" bench "$@" --no-progress-bar --json 2>"$OUT/last.err"); then
        echo "failed: ucx4j bench $* (row $row):" >&2
        cat "$OUT/last.err" >&2
        exit 1
    fi
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["bandwidth_mbps"] if d["mode"]!="latency" else d["round_trips_per_s"])' \
        <<<"$json" >>"$OUT/$name"
}

# perftest NAME SIZE EXTRA_ENV: ucx_perftest tag_bw -e between two processes on the same-host worker's
# transports; appends its MB/s to $OUT/NAME.
perftest() {
    local name=$1 size=$2 extra=$3 bytes csv penv
    bytes=$(python3 -c 'import sys; s=sys.argv[1]; m={"Ki":1<<10,"Mi":1<<20,"Gi":1<<30}; print(int(s[:-2])*m[s[-2:]] if s[-2:] in m else int(s))' "$size")
    penv="UCX_TLS=sysv,cma UCX_MM_ERROR_HANDLING=y UCX_SYSV_ERROR_HANDLING=y UCX_POSIX_ERROR_HANDLING=y $PERFTEST_MM $extra"
    local iters=20000
    [ "$bytes" -ge 16777216 ] && iters=400
    [ "$bytes" -lt 16777216 ] && [ "$bytes" -ge 262144 ] && iters=5000
    csv=$(bench_perftest "$penv" "$penv" "-e" "-t tag_bw -s $bytes -n $iters -O 16 -e") || exit 1
    IFS=, read -r _ _ _ _ _ bw _ _ <<<"$csv"
    echo "$bw" >>"$OUT/$name"
}

for r in $(seq 1 "$ROUNDS"); do
    for s in "${SIZES[@]}"; do
        echo "round $r/$ROUNDS, $s" >&2
        for row in "${ROW_NAMES[@]}"; do
            run "$row-$s" "$row" --comm "$(row_comm "$row")" --mode bandwidth --size "$s" --window 16
        done
        if [ "$PERFTEST" = 1 ]; then
            perftest "perftest-$s" "$s" ""
            for row in "${ROW_NAMES[@]}"; do
                case $row in
                    cma) perftest "perftest_cma-$s" "$s" "UCX_CMA_MEMORY_INVALIDATE=y" ;;
                    nocma) perftest "perftest_nocma-$s" "$s" "UCX_CMA_MEMORY_INVALIDATE=n" ;;
                esac
            done
        fi
    done
    echo "round $r/$ROUNDS, 1 KiB round trips" >&2
    for row in "${ROW_NAMES[@]}"; do
        run "$row-rt" "$row" --comm "$(row_comm "$row")" --mode latency --size 1Ki --iters "$LAT_ITERS"
    done
done

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$OUT" "$ROUNDS" "${ROW_NAMES[*]}" "${SIZES[@]}" <<'PY'
import os, statistics, sys
out, rounds, rows, sizes = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
titles = {
    "on": "ucx:// defaults",
    "off": "ucx:// same-host-shared-memory=false (UCX on tcp)",
    "tcp": "tcp://",
    "cma": "ucx:// defaults + UCX_CMA_MEMORY_INVALIDATE=y",
    "nocma": "ucx:// defaults + UCX_CMA_MEMORY_INVALIDATE=n",
    "base": "ucx:// defaults, baseline jars",
    "perftest": "ucx_perftest -e, sysv,cma, same settings",
    "perftest_cma": "ucx_perftest -e, sysv,cma, UCX_CMA_MEMORY_INVALIDATE=y",
    "perftest_nocma": "ucx_perftest -e, sysv,cma, UCX_CMA_MEMORY_INVALIDATE=n",
}
def med(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return statistics.median(float(x) for x in f.read().split())
cols = list(rows) + [c for c in ("perftest", "perftest_cma", "perftest_nocma") if any(os.path.exists(os.path.join(out, f"{c}-{s}")) for s in sizes)]
ratios = [r for r in rows if r not in ("tcp", "off")] if "tcp" in rows else []
print("| row | " + " | ".join(titles[c] for c in cols) + "".join(f" | {r} / tcp://" for r in ratios) + " |")
print("|---" * (1 + len(cols) + len(ratios)) + "|")
fmt = lambda v: "" if v is None else f"{v:,.0f}"
for label, key in [(f"bandwidth {s}, MB/s", s) for s in sizes] + [("1 KiB round trips/s", "rt")]:
    vals = [med(f"{c}-{key}") for c in cols]
    tcp = med(f"tcp-{key}")
    rat = ["" if (med(f"{r}-{key}") is None or not tcp) else f"{med(f'{r}-{key}') / tcp:.2f}" for r in ratios]
    print(f"| {label} | " + " | ".join(fmt(v) for v in vals) + "".join(f" | {x}" for x in rat) + " |")
print()
print(f"median of {rounds} alternating runs per cell; window 16; `ucx4j bench --comm ...`; ucx_perftest tag_bw -O 16 (window 16).")
PY
