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

# run NAME SHM ARGS...: one `ucx4j bench` with same-host-shared-memory=SHM; appends its figure to $OUT/NAME.
run() {
    local name=$1 shm=$2 json
    shift 2
    if ! json=$(UCX4J__SAME_HOST_SHARED_MEMORY=$shm "$UCX4J" bench "$@" --no-progress-bar --json 2>"$OUT/last.err"); then
        echo "failed: ucx4j bench $* (same-host-shared-memory $shm):" >&2
        cat "$OUT/last.err" >&2
        exit 1
    fi
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["bandwidth_mbps"] if d["mode"]!="latency" else d["round_trips_per_s"])' \
        <<<"$json" >>"$OUT/$name"
}

for r in $(seq 1 "$ROUNDS"); do
    for s in "${SIZES[@]}"; do
        echo "round $r/$ROUNDS, $s" >&2
        run "ucx-true-$s" true --comm ucx --mode bandwidth --size "$s" --window 16
        run "ucx-false-$s" false --comm ucx --mode bandwidth --size "$s" --window 16
        run "tcp-$s" true --comm tcp --mode bandwidth --size "$s" --window 16
    done
    echo "round $r/$ROUNDS, 1 KiB round trips" >&2
    run "ucx-true-rt" true --comm ucx --mode latency --size 1Ki --iters "$LAT_ITERS"
    run "ucx-false-rt" false --comm ucx --mode latency --size 1Ki --iters "$LAT_ITERS"
    run "tcp-rt" true --comm tcp --mode latency --size 1Ki --iters "$LAT_ITERS"
done

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$OUT" "$ROUNDS" "${SIZES[@]}" <<'PY'
import os, statistics, sys
out, rounds, sizes = sys.argv[1], sys.argv[2], sys.argv[3:]
def med(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return statistics.median(float(x) for x in f.read().split())
print("| row | ucx:// defaults (same-host workers, shared memory) | ucx:// same-host-shared-memory=false (UCX on tcp) | tcp:// | defaults / tcp:// |")
print("|---|---|---|---|---|")
for label, key in [(f"bandwidth {s}, MB/s", s) for s in sizes] + [("1 KiB round trips/s", "rt")]:
    on, off, tcp = med(f"ucx-true-{key}"), med(f"ucx-false-{key}"), med(f"tcp-{key}")
    print(f"| {label} | {on:,.0f} | {off:,.0f} | {tcp:,.0f} | {on / tcp:.2f} |")
print()
print(f"median of {rounds} alternating runs per cell; window 16; `ucx4j bench --comm ...`.")
PY
