#!/usr/bin/env bash
# What ucx4j-comm's framing costs: ucx:// messages beside raw core tag messages (and tcp://), in one
# run, alternating, with the same sizes and window (16 in flight). Rows: bandwidth at 1, 16 and 64 MiB
# (one frame per message), and 1 KiB round trips. Each configuration runs with peer error handling on
# (the default: UCX uses tcp only) and off (UCX4J__PEER_ERROR_HANDLING=false: shared memory, cma);
# tcp:// does not depend on it. Each cell is the median of ROUNDS runs (default 2). Prints a Markdown
# table with the ratios ucx:// / tag and ucx:// / tcp://; progress and the load average go to stderr.
#
# Units: bandwidth MB/s (MB = 2^20 bytes); round trips per second (1 KiB message and its echo).
#
# Environment: ROUNDS=2, SIZES="1Mi 16Mi 64Mi", LAT_ITERS=30000 (1 KiB round trips), PEH="true false"
# (the peer error handling settings, tcp:// runs with the first), BW_ITERS (bandwidth messages per run;
# default the bench's own, about 4 GiB worth), WARMUP_TIME (ucx4j --warmup-time; default its own),
# JSON_FILE (also write every run's figure there, as JSON: bench/quiet-host.sh reads it).
#
#   bench/comm-vs-tag.sh              # ~4 minutes on a 2-core VM
#   ROUNDS=3 SIZES="1Mi 64Mi" LAT_ITERS=10000 bench/comm-vs-tag.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
ROUNDS=${ROUNDS:-2}
# 1 KiB round trips per run: at 15,000-30,000 a second, fewer last well under a second, and this VM's
# rate swings up to 3x between 100 ms slices (docs/BENCHMARKS.md, session 4).
LAT_ITERS=${LAT_ITERS:-30000}
read -r -a SIZES <<<"${SIZES:-1Mi 16Mi 64Mi}"
read -r -a PEHS <<<"${PEH:-true false}"
for peh in "${PEHS[@]}"; do
    [ "$peh" = true ] || [ "$peh" = false ] || { echo "PEH: true or false, not '$peh'" >&2; exit 2; }
done
BENCH_ARGS=()
[ -z "${WARMUP_TIME:-}" ] || BENCH_ARGS+=(--warmup-time "$WARMUP_TIME")
BW_ARGS=()
[ -z "${BW_ITERS:-}" ] || BW_ARGS+=(--iters "$BW_ITERS")
UCX4J="$ROOT/bin/ucx4j"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

"$UCX4J" --version >/dev/null   # builds once, before anything is timed
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# run NAME PEH ARGS...: one measurement, appended to $OUT/NAME as the number that matters.
run() {
    local name=$1 peh=$2
    shift 2
    local json
    if ! json=$(UCX4J__PEER_ERROR_HANDLING=$peh "$UCX4J" bench "$@" "${BENCH_ARGS[@]}" --no-progress-bar --json \
            2>"$OUT/last.err"); then
        echo "failed: ucx4j bench $* (peer-error-handling $peh):" >&2
        cat "$OUT/last.err" >&2
        exit 1
    fi
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); v=d.get("bandwidth_mbps") if d.get("mode")!="latency" else (d.get("round_trips_per_s") or d.get("msg_rate",0)/2); print(v)' \
        <<<"$json" >>"$OUT/$name"
}

for r in $(seq 1 "$ROUNDS"); do
    for peh in "${PEHS[@]}"; do
        for s in "${SIZES[@]}"; do
            echo "round $r/$ROUNDS, peer-error-handling $peh, $s" >&2
            run "tag-$peh-$s" $peh --op tag --mode bandwidth --size "$s" --window 16 "${BW_ARGS[@]}"
            run "ucx-$peh-$s" $peh --comm ucx --mode bandwidth --size "$s" --window 16 "${BW_ARGS[@]}"
            [ $peh = "${PEHS[0]}" ] && run "tcp-$s" $peh --comm tcp --mode bandwidth --size "$s" --window 16 "${BW_ARGS[@]}"
        done
        echo "round $r/$ROUNDS, peer-error-handling $peh, 1 KiB round trips" >&2
        run "tag-$peh-rt" $peh --op tag --mode latency --size 1Ki --iters "$LAT_ITERS"
        run "ucx-$peh-rt" $peh --comm ucx --mode latency --size 1Ki --iters "$LAT_ITERS"
        [ $peh = "${PEHS[0]}" ] && run "tcp-rt" $peh --comm tcp --mode latency --size 1Ki --iters "$LAT_ITERS"
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

PEH="${PEHS[*]}" python3 - "$OUT" "$ROUNDS" "${JSON_FILE:-}" "${SIZES[@]}" <<'EOF'
import json, os, statistics, sys
out, rounds, json_file, sizes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pehs = os.environ["PEH"].split()
def values(name):
    with open(os.path.join(out, name)) as f:
        return [float(x) for x in f.read().split()]
def med(name):
    return statistics.median(values(name))
if json_file:
    # Every run's figure, in run order: bandwidth MB/s (MB = 2^20 B) or 1 KiB round trips per second.
    runs = {n: values(n) for n in sorted(os.listdir(out)) if n != "last.err"}
    with open(json_file, "w") as f:
        json.dump({"rounds": int(rounds), "sizes": sizes, "peer_error_handling": pehs, "window": 16, "runs": runs}, f, indent=1)
rows = [(f"bandwidth {s}, MB/s", s) for s in sizes] + [("1 KiB round trips/s", "rt")]
print("| row | peer error handling | core tag | ucx:// | tcp:// | ucx:// / tag | ucx:// / tcp:// |")
print("|---|---|---|---|---|---|---|")
for label, key in rows:
    tcp = med(f"tcp-{key}")
    for peh in pehs:
        tag, ucx = med(f"tag-{peh}-{key}"), med(f"ucx-{peh}-{key}")
        print(f"| {label} | {'on (tcp)' if peh == 'true' else 'off (shm)'} | {tag:,.0f} | {ucx:,.0f} | {tcp:,.0f} "
              f"| {ucx / tag:.2f} | {ucx / tcp:.2f} |")
print()
print(f"median of {rounds} alternating runs per cell; window 16; core tag rows: `ucx4j bench --op tag`, "
      "round trips there = message rate / 2.")
EOF
