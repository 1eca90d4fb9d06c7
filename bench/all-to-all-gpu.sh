#!/usr/bin/env bash
# ucx4j's all-to-all of device partitions between two workers (ucx4j launch ... -- ucx4j bench --all-to-all
# --memory cuda) beside ucx_perftest -m cuda tag_bw in both directions at the same size and placement, in one
# run, alternating, ROUNDS rounds. The issue's target: the all-to-all's aggregate >= 0.9 x (tag_bw A->B +
# tag_bw B->A), medians of the rounds.
#
# Placement: two GPUs when there are (GPU_A=0, GPU_B=1: across NVLink or PCIe), else the one GPU shared by
# two workers (GPU_A=GPU_B=0; the launcher's --gpus 0,0). ucx_perftest's direction A->B runs its client
# with CUDA_VISIBLE_DEVICES=GPU_A and its server with GPU_B (the client sends); B->A the other way round.
# The workers get what ucx4j launch gives (their GPU first, the other visible). Both tools run with
# ucx4j's CUDA defaults (UCX_RNDV_THRESH=8192 UCX_RNDV_FRAG_MEM_TYPE=cuda) unless set, and with peer error
# handling (ucx_perftest -e), as ucx4j's endpoints have it.
#
# Each round: perftest A->B, perftest B->A, both at once (their sum: on one GPU both directions share its
# memory bandwidth, so that sum, not the sum of the separate runs, is what an all-to-all can reach),
# all-to-all over ucx://. Then once, the all-to-all over tcp://
# (device frames staged through host memory), for the report. Progress goes to stderr.
#
# Environment:
#   SIZE=67108864 (bytes per partition and per perftest message)  ROUNDS=3  GPU_A  GPU_B
#   PT_ITERS=10000 (ucx_perftest -n)  BOTH_ITERS=10000 (-n of each at once)  A2A_ITERS=10000 (all-to-all rounds of one run, as many as ucx_perftest -n: 1,000 was a 0.2 s window across NVLink, ~10% of it start-up)  TCP_ITERS=20
#   WINDOW=16 (partitions in flight per peer)  DEADLINE (seconds: start no run after it)
#   BENCH_RUN_TIMEOUT=120 (seconds per run)  UCX4J (the command, default bin/ucx4j)
# With OUT set: $OUT/all-to-all-gpu.json (every figure and raw output) and $OUT/all-to-all-gpu.md.
# Units: MB/s with MB = 2^20 bytes, as ucx_perftest prints them.
#
#   bin/gpu-run all-to-all                       # on the GPU machine (bin/gpu-pack first, here)
#   SIZE=1048576 ROUNDS=1 bench/all-to-all-gpu.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
SIZE=${SIZE:-67108864}
ROUNDS=${ROUNDS:-3}
PT_ITERS=${PT_ITERS:-10000}
BOTH_ITERS=${BOTH_ITERS:-10000}
A2A_ITERS=${A2A_ITERS:-10000}
TCP_ITERS=${TCP_ITERS:-20}
WINDOW=${WINDOW:-16}
UCX4J=${UCX4J:-$ROOT/bin/ucx4j}
export BENCH_RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-120}
for kv in UCX_RNDV_THRESH=8192 UCX_RNDV_FRAG_MEM_TYPE=cuda; do
    name=${kv%%=*}
    [ -n "${!name+set}" ] || export "${kv?}"
done

command -v "${UCX_PERFTEST:-ucx_perftest}" >/dev/null || { echo "ucx_perftest not found (the libucx-cu13 wheel's: bin/gpu-run puts it on PATH)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed to parse the results" >&2; exit 1; }
command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found: this benchmark needs a GPU" >&2; exit 1; }
GPUS=$(nvidia-smi -L | grep -c '^GPU ' || true)
[ "$GPUS" -ge 1 ] || { echo "no GPU (nvidia-smi -L lists none)" >&2; exit 1; }
if [ "$GPUS" -ge 2 ]; then GPU_A=${GPU_A:-0} GPU_B=${GPU_B:-1}; else GPU_A=${GPU_A:-0} GPU_B=${GPU_B:-0}; fi
export CUDA_DEVICE_ORDER=PCI_BUS_ID

start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
past_deadline() { [ -n "${DEADLINE:-}" ] && [ "$(elapsed)" -ge "$DEADLINE" ]; }
say() { echo "all-to-all-gpu: $* ($(elapsed) s, load $(bench_loadavg))" >&2; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RAW="$WORK/raw.tsv" # round, row, value (MB/s or empty when failed), raw output
: >"$RAW"
FAILED=0

perftest() { # perftest ROUND ROW CLIENT_GPU SERVER_GPU
    local csv flags="-m cuda -e"
    if csv=$(bench_perftest "CUDA_VISIBLE_DEVICES=$4" "CUDA_VISIBLE_DEVICES=$3" "$flags" \
            "-t tag_bw -s $SIZE -n $PT_ITERS $flags"); then
        IFS=, read -r _ _ _ _ _ bw _ _ <<<"$csv"
        printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$bw" "$csv" >>"$RAW"
    else
        printf '%s\t%s\t\t\n' "$1" "$2" >>"$RAW"
        FAILED=1
    fi
}

perftest_both() { # perftest_both ROUND: A->B and B->A at once; the row is the sum of the two figures
    local a b ab ba
    a=$(mktemp) b=$(mktemp)
    (bench_perftest "CUDA_VISIBLE_DEVICES=$GPU_B" "CUDA_VISIBLE_DEVICES=$GPU_A" "-m cuda -e" \
        "-t tag_bw -s $SIZE -n $BOTH_ITERS -m cuda -e" >"$a") &
    (bench_perftest "CUDA_VISIBLE_DEVICES=$GPU_A" "CUDA_VISIBLE_DEVICES=$GPU_B" "-m cuda -e" \
        "-t tag_bw -s $SIZE -n $BOTH_ITERS -m cuda -e" >"$b") &
    wait
    IFS=, read -r _ _ _ _ _ ab _ _ <"$a"
    IFS=, read -r _ _ _ _ _ ba _ _ <"$b"
    rm -f "$a" "$b"
    if [ -n "$ab" ] && [ -n "$ba" ]; then
        printf '%s\t%s\t%s\t%s\n' "$1" perftest_concurrent "$(python3 -c "print($ab + $ba)")" "$ab,$ba" >>"$RAW"
    else
        printf '%s\t%s\t\t\n' "$1" perftest_concurrent >>"$RAW"
        FAILED=1
    fi
}

alltoall() { # alltoall ROUND ROW TRANSPORT ITERS
    local out status=0 json
    out=$(timeout -k 5 "$BENCH_RUN_TIMEOUT" "$UCX4J" launch --gpus "$GPU_A,$GPU_B" -- ucx4j bench --all-to-all \
        --memory cuda --comm "$3" --size "$SIZE" --iters "$4" --window "$WINDOW" --json 2>"$WORK/launch.err") \
        || status=$?
    # Rank 0 prints the JSON; the launcher prefixes every line with the worker's name.
    json=$(sed -n 's/^\[[^]]*\] //p' <<<"$out")
    if [ $status -eq 0 ] && bw=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["results"][0]["aggregate_mb_s"])' "$json" 2>/dev/null); then
        printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$bw" "$(tr -d '\n' <<<"$json")" >>"$RAW"
    else
        echo "failed (exit $status): ucx4j launch --gpus $GPU_A,$GPU_B -- ucx4j bench --all-to-all --comm $3:" >&2
        tail -n 30 "$WORK/launch.err" >&2
        printf '%s\t%s\t\t\n' "$1" "$2" >>"$RAW"
        FAILED=1
    fi
}

say "GPU_A=$GPU_A GPU_B=$GPU_B SIZE=$SIZE ROUNDS=$ROUNDS PT_ITERS=$PT_ITERS A2A_ITERS=$A2A_ITERS WINDOW=$WINDOW"
"$UCX4J" --version >/dev/null
for round in $(seq 1 "$ROUNDS"); do
    past_deadline && { say "DEADLINE reached: no round $round"; break; }
    say "round $round/$ROUNDS: ucx_perftest tag_bw A->B"
    perftest "$round" perftest_a_to_b "$GPU_A" "$GPU_B"
    say "round $round/$ROUNDS: ucx_perftest tag_bw B->A"
    perftest "$round" perftest_b_to_a "$GPU_B" "$GPU_A"
    say "round $round/$ROUNDS: ucx_perftest tag_bw A->B and B->A at once"
    perftest_both "$round"
    say "round $round/$ROUNDS: ucx4j all-to-all over ucx://"
    alltoall "$round" alltoall_ucx ucx "$A2A_ITERS"
done
if ! past_deadline; then
    say "once: ucx4j all-to-all over tcp:// (device frames staged through host memory)"
    alltoall 1 alltoall_tcp tcp "$TCP_ITERS"
fi

if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; fi
python3 - "$RAW" "${OUT:-}" "$GPU_A" "$GPU_B" "$SIZE" "$GPUS" <<'PY'
import json, statistics, sys
raw, out, a, b, size, gpus = sys.argv[1:7]
rows = {}
runs = []
for line in open(raw):
    parts = line.rstrip("\n").split("\t")
    rnd, row, value = parts[0], parts[1], parts[2]
    runs.append({"round": int(rnd), "row": row, "mb_s": float(value) if value else None,
                 "raw": parts[3] if len(parts) > 3 else ""})
    if value:
        rows.setdefault(row, []).append(float(value))
med = {r: statistics.median(v) for r, v in rows.items()}
both = med.get("perftest_a_to_b", 0) + med.get("perftest_b_to_a", 0)
ratio = med["alltoall_ucx"] / both if "alltoall_ucx" in med and both else None
conc = med.get("perftest_concurrent")
ratio_conc = med["alltoall_ucx"] / conc if "alltoall_ucx" in med and conc else None
placement = f"GPU {a} and GPU {b}" if a != b else f"two workers sharing GPU {a}"
lines = [f"All-to-all of {int(size):,}-byte device partitions, {placement} ({gpus} GPUs on the machine); "
         "medians, MB/s (MB = 2^20 bytes)", "",
         "| row | runs | MB/s |", "|---|---|---|"]
names = {"perftest_a_to_b": f"ucx_perftest -m cuda -e tag_bw, GPU {a} -> GPU {b}",
         "perftest_b_to_a": f"ucx_perftest -m cuda -e tag_bw, GPU {b} -> GPU {a}",
         "perftest_concurrent": "ucx_perftest -m cuda -e tag_bw, both directions at once (sum)",
         "alltoall_ucx": "ucx4j all-to-all over ucx:// (aggregate, both directions at once)",
         "alltoall_tcp": "ucx4j all-to-all over tcp:// (aggregate; staged through host memory)"}
for r in ["perftest_a_to_b", "perftest_b_to_a", "perftest_concurrent", "alltoall_ucx", "alltoall_tcp"]:
    if r in med:
        lines.append(f"| {names[r]} | {len(rows[r])} | {med[r]:,.0f} |")
lines.append("")
if ratio is not None:
    lines.append(f"all-to-all ucx:// / (A->B + B->A) = {ratio:.2f} (target >= 0.90: {'met' if ratio >= 0.9 else 'NOT met'})")
if ratio_conc is not None:
    lines.append(f"all-to-all ucx:// / (both directions at once) = {ratio_conc:.2f} (the ceiling where both"
                 " directions share one GPU's memory)")
text = "\n".join(lines)
print(text)
doc = {"gpu_a": int(a), "gpu_b": int(b), "size": int(size), "medians_mb_s": med, "ratio": ratio,
       "ratio_to_concurrent": ratio_conc, "runs": runs}
if out:
    open(f"{out}/all-to-all-gpu.json", "w").write(json.dumps(doc, indent=2))
    open(f"{out}/all-to-all-gpu.md", "w").write(text + "\n")
PY
exit $FAILED
