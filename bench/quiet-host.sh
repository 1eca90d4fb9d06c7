#!/usr/bin/env bash
# Every host-memory figure that issue 15's targets name, in one run of about 9 minutes, for a quiet
# many-core machine (the GPU machine's idle CPUs: `bin/gpu-run host`), and on any CPU-only machine.
# It runs the two scripts that measure them, alternating, ROUNDS times, and reads their raw figures:
#
#   bench/vs-perftest-gpu.sh (MEMORY=host, one round per call, peer error handling off and on), ucx4j
#   beside ucx_perftest with the same transports:
#     tag 8 B latency, ucx4j's progress caller / thread-polling / thread-blocking (three calls);
#     tag 8 B message rate, caller; tag 1 MiB and 64 MiB bandwidth, the default progress mode
#   bench/comm-vs-tag.sh (one round per call, sizes 1 MiB and 64 MiB): comm ucx:// beside the core's
#     tag and tcp:// (bandwidth, window 16), and 1 KiB round trips of ucx:// beside the core's tag
#
# Writes to $OUT (or a temporary folder, named on stderr): quiet-host.md (the table: medians, ratios,
# the targets met or not), quiet-host.json (the medians, and every run of every round with its raw
# output), quiet-host.svg (the ratios against their targets) and quiet-host.log (the scripts' progress).
# Each cell is the median of its rounds; ucx_perftest's 8 B latency is the median over the three
# latency calls of every round. Ratios are ratios of medians. A failed run is left out and named.
#
# Environment:
#   ROUNDS=4           alternating rounds (fewer when BUDGET runs out first)
#   BUDGET=530         seconds: no round starts that would end after it (by the longest round so far)
#   LAT8_ITERS=100000  8 B round trips per latency run    RATE_ITERS=1000000  8 B messages per rate run
#   MID_ITERS=10000    1 MiB messages (core vs perftest)   BW_ITERS=100        64 MiB messages (same)
#   RT_ITERS=30000     1 KiB round trips (comm vs tag)     COMM_BW_ITERS       comm-vs-tag's messages per
#                                                                              bandwidth run (default its own)
#   WARMUP_TIME=5      ucx4j --warmup-time, every run (0.5 s left the comm 20-40% below its steady state:
#                      docs/BENCHMARKS.md, "Warm-up decides the comm's host figures")
#   HOST_UCX_ENV       UCX_* settings for both tools. Default: where nvidia-smi sees a GPU, ucx4j's CUDA
#                      defaults (UCX_RNDV_THRESH=8192 UCX_RNDV_FRAG_MEM_TYPE=cuda, which ucx4j applies
#                      to itself there), so that ucx_perftest runs with the same settings; else none
#   UCX4J              the command (default bin/ucx4j)
#
#   bin/gpu-run host                                       # on the GPU machine (its CPUs, host memory)
#   ROUNDS=1 LAT8_ITERS=2000 RATE_ITERS=20000 MID_ITERS=50 BW_ITERS=4 RT_ITERS=500 COMM_BW_ITERS=8 \
#       WARMUP_TIME=0.2 bench/quiet-host.sh                # a quick check on a CPU-only machine
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
ROUNDS=${ROUNDS:-4}
BUDGET=${BUDGET:-530}
LAT8_ITERS=${LAT8_ITERS:-100000}
RATE_ITERS=${RATE_ITERS:-1000000}
MID_ITERS=${MID_ITERS:-10000}
BW_ITERS=${BW_ITERS:-100}
RT_ITERS=${RT_ITERS:-30000}
COMM_BW_ITERS=${COMM_BW_ITERS:-}
WARMUP_TIME=${WARMUP_TIME:-5}
UCX4J=${UCX4J:-$ROOT/bin/ucx4j}
if [ -z "${HOST_UCX_ENV+set}" ]; then
    HOST_UCX_ENV=""
    if nvidia-smi -L >/dev/null 2>&1; then
        HOST_UCX_ENV="UCX_RNDV_THRESH=8192 UCX_RNDV_FRAG_MEM_TYPE=cuda"
    fi
fi
for kv in $HOST_UCX_ENV; do
    [[ "$kv" == UCX_*=* ]] || { echo "HOST_UCX_ENV: '$kv' is not UCX_NAME=value" >&2; exit 2; }
done

command -v python3 >/dev/null || { echo "python3 is needed to read the results" >&2; exit 1; }
command -v "${UCX_PERFTEST:-ucx_perftest}" >/dev/null \
    || { echo "ucx_perftest not found (it comes with the libucx-cu13 wheel: bin/gpu-run puts it on PATH)" >&2; exit 1; }
"$UCX4J" --version >/dev/null   # builds once (bin/gpu-run: the packed jars), before anything is timed

if [ -n "${OUT:-}" ]; then
    DEST=$OUT
else
    DEST=$(mktemp -d /tmp/quiet-host.XXXXXX)
fi
mkdir -p "$DEST"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LOG="$DEST/quiet-host.log"
: >"$LOG"

# One call of vs-perftest-gpu.sh: part name, its rows (ONLY), ucx4j's extra bench options.
PARTS=(
    "lat_caller|tag_lat_8 tag_rate_8|--progress caller"
    "lat_polling|tag_lat_8|--progress thread-polling"
    "lat_blocking|tag_lat_8|--progress thread-blocking"
    "bandwidth|tag_bw_1Mi tag_bw_64Mi|"
)

start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
longest=0
done_rounds=0
stopped=""
failures=()
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "quiet-host: $ROUNDS rounds within $BUDGET s; ${HOST_UCX_ENV:-no UCX settings} for both tools; log: $LOG" >&2
for round in $(seq "$ROUNDS"); do
    if [ $(($(elapsed) + longest)) -gt "$BUDGET" ]; then
        stopped="stopped before round $round: it would end after the budget ($BUDGET s; a round took up to $longest s)"
        break
    fi
    round_start=$(date +%s)
    dir="$WORK/r$round"
    mkdir -p "$dir"
    for part in "${PARTS[@]}"; do
        IFS='|' read -r name only args <<<"$part"
        echo "round $round/$ROUNDS: $name ($(elapsed) s)" >&2
        # CUDA_UCX_ENV: set for both tools (where not set already) and recorded in the part's JSON.
        if ! env MEMORY=host ROUNDS=1 PEH="off on" ONLY="$only" UCX4J_BENCH_ARGS="$args" \
                LAT_ITERS="$LAT8_ITERS" RATE_ITERS="$RATE_ITERS" MID_ITERS="$MID_ITERS" BW_ITERS="$BW_ITERS" \
                WARMUP_TIME="$WARMUP_TIME" CUDA_UCX_ENV="$HOST_UCX_ENV" OUT="$dir/$name" UCX4J="$UCX4J" \
                bash "$ROOT/bench/vs-perftest-gpu.sh" >>"$LOG" 2>&1; then
            failures+=("round $round, $name: vs-perftest-gpu.sh failed (runs left out; see quiet-host.log)")
        fi
    done
    echo "round $round/$ROUNDS: comm ($(elapsed) s)" >&2
    # shellcheck disable=SC2086 # HOST_UCX_ENV: words NAME=value
    if ! env $HOST_UCX_ENV ROUNDS=1 SIZES="1Mi 64Mi" PEH="true false" LAT_ITERS="$RT_ITERS" \
            BW_ITERS="$COMM_BW_ITERS" WARMUP_TIME="$WARMUP_TIME" JSON_FILE="$dir/comm.json" \
            bash "$ROOT/bench/comm-vs-tag.sh" >>"$LOG" 2>&1; then
        failures+=("round $round, comm: comm-vs-tag.sh failed (this round's comm figures left out; see quiet-host.log)")
        rm -f "$dir/comm.json"
    fi
    done_rounds=$round
    took=$(($(date +%s) - round_start))
    [ "$took" -le "$longest" ] || longest=$took
done
[ -z "$stopped" ] || echo "$stopped" >&2

export Q_MACHINE Q_CPU Q_UCX Q_UCX4J Q_DATE Q_SECONDS Q_DONE Q_PLANNED Q_STOPPED Q_LOAD_START Q_LOAD_END Q_UCX_ENV \
    Q_FAILURES Q_ITERS
Q_MACHINE="$(hostname), $(nproc) cores$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed 's/^/, /' | paste -sd' ' - || true)"
Q_CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
Q_UCX=$(ucx_info -v 2>/dev/null | sed -n 's/^# Library version: //p; s/^# Version //p' | head -n 1)
Q_UCX4J=$("$UCX4J" --version 2>/dev/null | head -n 1)
Q_DATE=$(date -u '+%Y-%m-%dT%H:%M:%SZ') Q_SECONDS=$(elapsed) Q_DONE=$done_rounds Q_PLANNED=$ROUNDS Q_STOPPED=$stopped
Q_LOAD_START=$load_start Q_LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg) Q_UCX_ENV=$HOST_UCX_ENV
Q_FAILURES=$(printf '%s\n' "${failures[@]+"${failures[@]}"}")
Q_ITERS="8 B latency $LAT8_ITERS, 8 B rate $RATE_ITERS, 1 MiB $MID_ITERS, 64 MiB $BW_ITERS, 1 KiB round trips $RT_ITERS, comm bandwidth ${COMM_BW_ITERS:-as comm-vs-tag.sh chooses}; warm-up $WARMUP_TIME s"
python3 "$ROOT/bench/quiet_host_report.py" "$WORK" "$DEST"
echo "quiet-host: $DEST/quiet-host.md, .json, .svg ($(elapsed) s)" >&2
[ ${#failures[@]} -eq 0 ]
