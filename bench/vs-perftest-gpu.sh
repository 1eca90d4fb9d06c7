#!/usr/bin/env bash
# ucx4j bench beside ucx_perftest on GPU memory (or, with MEMORY=host, on host memory), in one run,
# alternating, with the same sizes and iteration counts, each with peer error handling on (ucx_perftest
# -e; ucx4j's default) and off (ucx_perftest's default; ucx4j with UCX4J__PEER_ERROR_HANDLING=false).
# Rows (id: ucx_perftest test; ucx4j bench options):
#   tag_bw_64Mi   tag_bw -s 64Mi        --op tag --mode bandwidth --size 64Mi
#   tag_bw_1Mi    tag_bw -s 1Mi         --op tag --mode bandwidth --size 1Mi
#   tag_lat_8     tag_lat -s 8          --op tag --mode latency --size 8
#   tag_rate_8    tag_bw -s 8 (msg/s)   --op tag --mode rate --size 8       (only when ONLY names it)
#   am_bw_64Mi    ucp_am_bw -s 64Mi     --op am --mode bandwidth --size 64Mi
#   put_bw_64Mi   ucp_put_bw -s 64Mi    --op put --mode bandwidth --size 64Mi
#   get_bw_64Mi   ucp_get -s 64Mi       --op get --mode bandwidth --size 64Mi
#   comm_ucx      --comm ucx --mode bandwidth --size 64Mi, beside the core's tag_bw_64Mi of the same round
#   comm_tcp      --comm tcp --mode bandwidth --size 64Mi (GPU memory: frames staged through host memory),
#                 once a round (with the first PEH setting: tcp:// does not depend on it)
# With GPU memory and CuPy importable, first the reference copies of 64 MiB with CuPy (pinned host to
# device, device to pinned host, device to device from SERVER_GPU to CLIENT_GPU): the comm_tcp row is
# also shown against the slower pinned copy, which the issue's target for host <-> device frames names.
# ucx_perftest gets -m MEMORY on both sides; ucx4j gets --memory MEMORY --gpu CLIENT_GPU --peer-gpu
# SERVER_GPU (nothing with MEMORY=host, so the script runs on a ucx4j without GPU options too). The
# perftest server runs with CUDA_VISIBLE_DEVICES=SERVER_GPU, its client with CLIENT_GPU. Both tools get
# the same UCX_* environment: with GPU memory, ucx4j's CUDA defaults (CUDA_UCX_ENV, below) unless set.
#
# Each cell is the median of ROUNDS runs. Prints a Markdown table with the ratios ucx4j / ucx_perftest
# (and comm / core tag, the median of the per-round ratios); writes every raw figure as JSON to
# $OUT/vs-perftest-gpu.json (and the table to $OUT/vs-perftest-gpu.md) when OUT is set, else to
# JSON_FILE (default: a temporary file, named on stderr). A run that fails is reported and left out;
# the script then exits 1 after the table. Progress and the load average go to stderr.
#
# Units as ucx_perftest prints them: latency one-way (half a round trip), usec; bandwidth MB/s,
# MB = 2^20 bytes. Needs ucx_perftest (the libucx-cu13 wheel's, for GPU memory) and python3.
#
# Environment (defaults for MEMORY=cuda; MEMORY=host: 10, 200, 2000, 10, 10, 0.5):
#   MEMORY=cuda|host  ROUNDS=3  SERVER_GPU=0  CLIENT_GPU=0  PEH="on off"  ONLY="row ids"
#   BW_ITERS=40000 (64 MiB)  MID_ITERS=10000 (1 MiB)  LAT_ITERS=1000 (8 B)  COMM_ITERS=40000 (comm_ucx)
#   RATE_ITERS=1000000 (tag_rate_8)
#   COMM_TCP_ITERS=50  WARMUP_TIME=1 (ucx4j --warmup-time)  WINDOW (ucx4j --window; default its own)
#   DEADLINE (seconds: start no run after it, nor a round that would end after it)
#   BENCH_RUN_TIMEOUT=90 (seconds per run)  UCX4J (the command, default bin/ucx4j)
#   UCX4J_BENCH_ARGS (more ucx4j bench options, e.g. "--progress caller")
#
#   MEMORY=host ROUNDS=1 BW_ITERS=4 bench/vs-perftest-gpu.sh      # a quick check on a CPU-only machine
#   SERVER_GPU=0 CLIENT_GPU=1 bench/vs-perftest-gpu.sh              # across NVLink, two GPUs
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
MEMORY=${MEMORY:-cuda}
ROUNDS=${ROUNDS:-3}
SERVER_GPU=${SERVER_GPU:-0}
CLIENT_GPU=${CLIENT_GPU:-0}
read -r -a PEH_LIST <<<"${PEH:-on off}"
UCX4J=${UCX4J:-$ROOT/bin/ucx4j}
if [ "$MEMORY" = host ]; then
    BW_ITERS=${BW_ITERS:-10} MID_ITERS=${MID_ITERS:-200} LAT_ITERS=${LAT_ITERS:-2000}
    COMM_ITERS=${COMM_ITERS:-10} COMM_TCP_ITERS=${COMM_TCP_ITERS:-10} WARMUP_TIME=${WARMUP_TIME:-0.5}
    RATE_ITERS=${RATE_ITERS:-1000000}
    CUDA_UCX_ENV=${CUDA_UCX_ENV:-}
else
    # 64 MiB at ~1.3 TB/s: 10,000 messages are a 0.5 s window. With 1,000 (50 ms) one stall of the JVM
    # (a GC, a JIT deoptimisation) moved ucx4j's figure between 0.58x and 0.99x ucx_perftest from run to
    # run of the same jars while ucx_perftest's stayed within 1% (docs/BENCHMARKS.md, session 6). With
    # 10,000 the comm's figure still moved 0.81-0.98x the core tag's between runs while the tag's moved
    # 0.4%; 40,000 (2 s) gave 0.95-0.99 (session 9): the 64 MiB rows run 40,000, both tools alike.
    BW_ITERS=${BW_ITERS:-40000} MID_ITERS=${MID_ITERS:-10000} LAT_ITERS=${LAT_ITERS:-1000}
    COMM_ITERS=${COMM_ITERS:-40000} COMM_TCP_ITERS=${COMM_TCP_ITERS:-50} WARMUP_TIME=${WARMUP_TIME:-1}
    RATE_ITERS=${RATE_ITERS:-1000000}
    # ucx4j's CUDA defaults (two of UCXX's three: not MEMTYPE_CACHE=n, docs/GPU.md): here for both tools.
    CUDA_UCX_ENV=${CUDA_UCX_ENV-UCX_RNDV_THRESH=8192 UCX_RNDV_FRAG_MEM_TYPE=cuda}
fi
export BENCH_RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-90}
UCX_ENV_USED=""   # what both tools ran with: CUDA_UCX_ENV where the user had not set the variable
for kv in $CUDA_UCX_ENV; do
    name=${kv%%=*}
    [ -n "${!name+set}" ] || export "${kv?}"
    UCX_ENV_USED="$UCX_ENV_USED $name=${!name}"
done
UCX_ENV_USED=${UCX_ENV_USED# }

MIB64=67108864
# row id, ucx_perftest test, ucx4j op, ucx4j mode, size, iterations
ROWS=(
    "tag_bw_64Mi tag_bw tag bandwidth $MIB64 $BW_ITERS"
    "tag_bw_1Mi tag_bw tag bandwidth 1048576 $MID_ITERS"
    "tag_lat_8 tag_lat tag latency 8 $LAT_ITERS"
    "tag_rate_8 tag_bw tag rate 8 $RATE_ITERS"
    "am_bw_64Mi ucp_am_bw am bandwidth $MIB64 $BW_ITERS"
    "put_bw_64Mi ucp_put_bw put bandwidth $MIB64 $BW_ITERS"
    "get_bw_64Mi ucp_get get bandwidth $MIB64 $BW_ITERS"
)
# row id, comm kind, iterations
COMM_ROWS=("comm_ucx ucx $COMM_ITERS" "comm_tcp tcp $COMM_TCP_ITERS")
ALL_IDS="$(for r in "${ROWS[@]}" "${COMM_ROWS[@]}"; do printf '%s ' "${r%% *}"; done)"
if [ -n "${ONLY:-}" ]; then
    keep() { local r id; for r in "$@"; do for id in $ONLY; do [ "${r%% *}" = "$id" ] && echo "$r"; done; done; }
    mapfile -t ROWS < <(keep "${ROWS[@]}")
    mapfile -t COMM_ROWS < <(keep "${COMM_ROWS[@]}")
    [ $((${#ROWS[@]} + ${#COMM_ROWS[@]})) -gt 0 ] || { echo "ONLY=$ONLY names no row (rows: $ALL_IDS)" >&2; exit 2; }
else
    # 8-byte message rate: a host-memory figure (bench/quiet-host.sh), run only when named.
    mapfile -t ROWS < <(printf '%s\n' "${ROWS[@]}" | grep -v '^tag_rate_8 ')
fi

command -v "${UCX_PERFTEST:-ucx_perftest}" >/dev/null || { echo "ucx_perftest not found (it comes with the libucx-cu13 wheel: bin/gpu-run puts it on PATH)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed to parse the results" >&2; exit 1; }

UCX4J_MEMORY_ARGS=()
PERFTEST_ENV_SERVER=""
PERFTEST_ENV_CLIENT=""
if [ "$MEMORY" != host ]; then
    UCX4J_MEMORY_ARGS=(--memory "$MEMORY" --gpu "$CLIENT_GPU" --peer-gpu "$SERVER_GPU")
    PERFTEST_ENV_SERVER="CUDA_VISIBLE_DEVICES=$SERVER_GPU"
    PERFTEST_ENV_CLIENT="CUDA_VISIBLE_DEVICES=$CLIENT_GPU"
fi
read -r -a EXTRA_ARGS <<<"${UCX4J_BENCH_ARGS:-}"
[ -z "${WINDOW:-}" ] || EXTRA_ARGS+=(--window "$WINDOW")

# Build once, up front (bin/gpu-run's prebuilt jars: nothing to build), and check the GPU options.
"$UCX4J" --version >/dev/null
if [ "$MEMORY" != host ]; then
    help=$("$UCX4J" bench --help 2>&1 || true)
    for opt in --memory --gpu --peer-gpu; do
        grep -q -e "${opt}[ ,=]" <<<"$help" || { echo "this ucx4j's bench has no $opt option: MEMORY=$MEMORY needs it" >&2; exit 1; }
    done
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    JSON_FILE="$OUT/vs-perftest-gpu.json"
    TABLE_FILE="$OUT/vs-perftest-gpu.md"
else
    JSON_FILE=${JSON_FILE:-$(mktemp --suffix=.json)}
    TABLE_FILE=""
fi
RAW="$WORK/raw.tsv"   # round, peh, row, tool, metric, value, the run's own output (CSV or JSON)
: >"$RAW"
FAILED=0

perftest() { # perftest ROUND PEH ROW TEST SIZE ITERS
    local round=$1 peh=$2 row=$3 test=$4 size=$5 iters=$6 flags="-m $MEMORY" csv
    [ "$peh" = on ] && flags="$flags -e"
    if ! csv=$(bench_perftest "$PERFTEST_ENV_SERVER" "$PERFTEST_ENV_CLIENT" "$flags" \
            "-t $test -s $size -n $iters $flags"); then
        printf '%s\t%s\t%s\tucx_perftest\tfailed\t\t\n' "$round" "$peh" "$row" >>"$RAW"
        FAILED=1
        return 0
    fi
    IFS=, read -r _ p50 _ overall _ bw _ _ <<<"$csv"
    if [ "$test" = tag_lat ]; then
        printf '%s\t%s\t%s\tucx_perftest\tlat_p50\t%s\t%s\n' "$round" "$peh" "$row" "$p50" "$csv" >>"$RAW"
        printf '%s\t%s\t%s\tucx_perftest\tlat_avg\t%s\t%s\n' "$round" "$peh" "$row" "$overall" "$csv" >>"$RAW"
    elif [ "$row" = tag_rate_8 ]; then
        IFS=, read -r _ _ _ _ _ _ _ mr <<<"$csv"
        printf '%s\t%s\t%s\tucx_perftest\trate\t%s\t%s\n' "$round" "$peh" "$row" "$mr" "$csv" >>"$RAW"
    else
        printf '%s\t%s\t%s\tucx_perftest\tbw\t%s\t%s\n' "$round" "$peh" "$row" "$bw" "$csv" >>"$RAW"
    fi
}

ucx4j() { # ucx4j ROUND PEH ROW BENCH_ARGS...: one `ucx4j bench` (two JVMs)
    local round=$1 peh=$2 row=$3 json status=0 handling=true
    shift 3
    [ "$peh" = on ] || handling=false
    json=$(UCX4J__PEER_ERROR_HANDLING=$handling timeout -k 5 "$BENCH_RUN_TIMEOUT" "$UCX4J" bench "$@" \
        "${UCX4J_MEMORY_ARGS[@]}" --warmup-time "$WARMUP_TIME" "${EXTRA_ARGS[@]}" --json --no-progress-bar \
        2>"$WORK/ucx4j.err") || status=$?
    if [ $status -ne 0 ] || ! python3 - "$round" "$peh" "$row" "$json" >>"$RAW" 2>>"$WORK/ucx4j.err" <<'PY'
import json, sys
round_, peh, row, text = sys.argv[1:5]
d = json.loads(text)
raw = json.dumps(d, separators=(",", ":"))
out = lambda metric, value: print("\t".join([round_, peh, row, "ucx4j", metric, str(value), raw]))
if d["mode"] == "latency":
    out("lat_p50", d["latency_us_p50"])
    out("lat_avg", d["latency_us_avg"])
elif d["mode"] == "rate":
    out("rate", d["msg_rate"])
else:
    out("bw", d["bandwidth_mbps"])
PY
    then
        echo "failed (exit $status): ucx4j bench $* (peer error handling $peh):" >&2
        tail -n 20 "$WORK/ucx4j.err" >&2
        printf '%s\t%s\t%s\tucx4j\tfailed\t\t\n' "$round" "$peh" "$row" >>"$RAW"
        FAILED=1
    fi
}

# reference_copies: CuPy's copy bandwidths (MB/s, 2^20) as one JSON line, or {"error": ...}.
reference_copies() {
    SERVER_GPU=$SERVER_GPU CLIENT_GPU=$CLIENT_GPU python3 - <<'PY' 2>&1 | tail -n 1
import json, os, time
try:
    import cupy as cp
    rt = cp.cuda.runtime
    n, iters = 64 << 20, 20
    src_gpu, dst_gpu = int(os.environ["SERVER_GPU"]), int(os.environ["CLIENT_GPU"])
    def measure(copy, device):
        with cp.cuda.Device(device):
            stream = cp.cuda.Stream(non_blocking=True)
            copy(stream.ptr)
            stream.synchronize()
            t = time.perf_counter()
            for _ in range(iters):
                copy(stream.ptr)
            stream.synchronize()
            return round(iters * n / (time.perf_counter() - t) / 2**20, 1)
    with cp.cuda.Device(dst_gpu):
        dst = rt.malloc(n)
        pinned = cp.cuda.alloc_pinned_memory(n)
    with cp.cuda.Device(src_gpu):
        src = rt.malloc(n)
    if src_gpu != dst_gpu:
        with cp.cuda.Device(dst_gpu):
            if rt.deviceCanAccessPeer(dst_gpu, src_gpu):
                try:
                    rt.deviceEnablePeerAccess(src_gpu)
                except rt.CUDARuntimeError:
                    pass  # already enabled
    out = {
        "h2d_pinned_mbps": measure(lambda s: rt.memcpyAsync(dst, pinned.ptr, n, rt.memcpyHostToDevice, s), dst_gpu),
        "d2h_pinned_mbps": measure(lambda s: rt.memcpyAsync(pinned.ptr, dst, n, rt.memcpyDeviceToHost, s), dst_gpu),
        "d2d_mbps": measure(lambda s: rt.memcpyPeerAsync(dst, dst_gpu, src, src_gpu, n, s), dst_gpu),
        "size": n, "iterations": iters, "from_gpu": src_gpu, "to_gpu": dst_gpu,
        "cupy": cp.__version__,
    }
    rt.free(src)
    rt.free(dst)
except Exception as e:  # the reference is optional: say why there is none
    out = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
PY
}

REFERENCE='{"error": "not measured (MEMORY=host)"}'
if [ "$MEMORY" = cuda ]; then
    echo "reference copies with CuPy (64 MiB, GPU $SERVER_GPU -> GPU $CLIENT_GPU) ..." >&2
    REFERENCE=$(reference_copies)
    echo "reference copies: $REFERENCE" >&2
fi
export REFERENCE

start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
past_deadline() { [ -n "${DEADLINE:-}" ] && [ "$(elapsed)" -ge "$DEADLINE" ]; }
load_start=$(bench_loadavg)
echo "load average at start: $load_start; MEMORY=$MEMORY, server GPU $SERVER_GPU, client GPU $CLIENT_GPU${UCX_ENV_USED:+, $UCX_ENV_USED}" >&2
done_rounds=0
stopped=""
round_seconds=0
for round in $(seq "$ROUNDS"); do
    if [ -n "${DEADLINE:-}" ] && [ $(($(elapsed) + round_seconds)) -gt "$DEADLINE" ]; then
        stopped="stopped before round $round: it would end after the deadline (${DEADLINE} s)"
        break
    fi
    round_start=$(date +%s)
    for peh in "${PEH_LIST[@]}"; do
        for spec in "${ROWS[@]}"; do
            read -r row test op mode size iters <<<"$spec"
            past_deadline && { stopped="stopped in round $round at the deadline (${DEADLINE} s)"; break 3; }
            echo "round $round/$ROUNDS, peer error handling $peh, $row ($(elapsed) s, load $(bench_loadavg))" >&2
            perftest "$round" "$peh" "$row" "$test" "$size" "$iters"
            ucx4j "$round" "$peh" "$row" --op "$op" --mode "$mode" --size "$size" --iters "$iters"
        done
        for spec in "${COMM_ROWS[@]}"; do
            read -r row kind iters <<<"$spec"
            # tcp:// does not depend on peer error handling: once a round, with the first setting.
            [ "$kind" = tcp ] && [ "$peh" != "${PEH_LIST[0]}" ] && continue
            past_deadline && { stopped="stopped in round $round at the deadline (${DEADLINE} s)"; break 3; }
            echo "round $round/$ROUNDS, peer error handling $peh, $row ($(elapsed) s, load $(bench_loadavg))" >&2
            ucx4j "$round" "$peh" "$row" --comm "$kind" --mode bandwidth --size "$MIB64" --iters "$iters"
        done
    done
    done_rounds=$round
    round_seconds=$(($(date +%s) - round_start))
done
load_end=$(bench_loadavg)
echo "load average at end: $load_end" >&2
[ -z "$stopped" ] || echo "$stopped" >&2

# The summary reads its facts from the environment (never pasted into the program).
export B_MACHINE B_UCX_VERSION B_UCX4J_VERSION B_DATE B_ELAPSED B_DONE B_STOPPED B_LOAD_START B_LOAD_END
B_MACHINE=$( { hostname; echo "$(nproc) cores"; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"; } | paste -sd'|' -)
B_UCX_VERSION=$(ucx_info -v 2>/dev/null | sed -n 's/^# Library version: //p; s/^# Version //p' | head -n 1)
B_UCX4J_VERSION=$("$UCX4J" --version 2>/dev/null | head -n 1)
B_DATE=$(date -u '+%Y-%m-%dT%H:%M:%SZ') B_ELAPSED=$(elapsed) B_DONE=$done_rounds B_STOPPED=$stopped
B_LOAD_START=$load_start B_LOAD_END=$load_end
export MEMORY SERVER_GPU CLIENT_GPU UCX_ENV_USED ROUNDS BW_ITERS MID_ITERS LAT_ITERS RATE_ITERS COMM_ITERS COMM_TCP_ITERS WARMUP_TIME
export B_EXTRA_ARGS="${EXTRA_ARGS[*]}" B_PEH="${PEH_LIST[*]}"
python3 - "$RAW" "$JSON_FILE" "${TABLE_FILE:-}" <<'PY'
import json, os, statistics, sys
from collections import defaultdict
raw_path, json_path, table_path = sys.argv[1:4]
e = os.environ
meta = {
    "date": e["B_DATE"], "machine": e["B_MACHINE"], "memory": e["MEMORY"],
    "server_gpu": e["SERVER_GPU"], "client_gpu": e["CLIENT_GPU"], "ucx_env": e["UCX_ENV_USED"],
    "ucx_version": e["B_UCX_VERSION"], "ucx4j_version": e["B_UCX4J_VERSION"],
    "rounds_planned": int(e["ROUNDS"]), "rounds_done": int(e["B_DONE"]), "stopped": e["B_STOPPED"],
    "seconds": int(e["B_ELAPSED"]), "load_start": e["B_LOAD_START"], "load_end": e["B_LOAD_END"],
    "iterations": {"bw_64Mi": int(e["BW_ITERS"]), "tag_bw_1Mi": int(e["MID_ITERS"]), "tag_lat_8": int(e["LAT_ITERS"]),
                   "tag_rate_8": int(e["RATE_ITERS"]),
                   "comm_ucx": int(e["COMM_ITERS"]), "comm_tcp": int(e["COMM_TCP_ITERS"])},
    "warmup_time": e["WARMUP_TIME"], "ucx4j_extra_args": e["B_EXTRA_ARGS"],
}
try:
    meta["reference_copies"] = json.loads(e["REFERENCE"])
except ValueError:
    meta["reference_copies"] = {"error": e["REFERENCE"]}
ref = meta["reference_copies"]
pinned = min(ref["h2d_pinned_mbps"], ref["d2h_pinned_mbps"]) if "h2d_pinned_mbps" in ref else None
runs, cells, per_round = [], defaultdict(list), defaultdict(dict)
for line in open(raw_path):
    rnd, peh, row, tool, metric, value, out = line.rstrip("\n").split("\t", 6)
    run = {"round": int(rnd), "peer_error_handling": peh, "row": row, "tool": tool, "metric": metric,
           "value": float(value) if value else None}
    if out:
        run["output"] = json.loads(out) if out.startswith("{") else out
    runs.append(run)
    if value:
        cells[(peh, row, metric, tool)].append(float(value))
        per_round[(peh, row, metric, tool)][int(rnd)] = float(value)
med = {k: statistics.median(v) for k, v in cells.items()}
labels = {
    "tag_bw_64Mi": ("tag_bw", "64 MiB", "bw", "tag bandwidth, MB/s"),
    "tag_bw_1Mi": ("tag_bw", "1 MiB", "bw", "tag bandwidth, MB/s"),
    "tag_lat_8": ("tag_lat", "8 B", "lat_p50", "tag latency p50, usec"),
    "tag_lat_8 avg": ("tag_lat", "8 B", "lat_avg", "tag latency avg, usec"),
    "tag_rate_8": ("tag_bw", "8 B", "rate", "tag message rate, msg/s"),
    "am_bw_64Mi": ("ucp_am_bw", "64 MiB", "bw", "am bandwidth, MB/s"),
    "put_bw_64Mi": ("ucp_put_bw", "64 MiB", "bw", "put bandwidth, MB/s"),
    "get_bw_64Mi": ("ucp_get", "64 MiB", "bw", "get bandwidth, MB/s"),
}
def fmt(x, metric):
    return "-" if x is None else (f"{x:,.3f}" if metric.startswith("lat") else f"{x:,.0f}")
def n(key):
    return len(cells.get(key, []))
pehs = e["B_PEH"].split()
lines = [f"MEMORY={meta['memory']}, server GPU {meta['server_gpu']}, client GPU {meta['client_gpu']}; UCX {meta['ucx_version']}"
         + (f"; {meta['ucx_env']}" if meta["ucx_env"] else "") + f"; {meta['machine']}", ""]
lines += ["| row | ucx_perftest test | size | metric | peer error handling | ucx_perftest | ucx4j | ucx4j / perftest |",
          "|---|---|---|---|---|---|---|---|"]
summary = []
for key, (test, size, metric, label) in labels.items():
    row = key.split()[0]
    for peh in pehs:
        pt, uj = med.get((peh, row, metric, "ucx_perftest")), med.get((peh, row, metric, "ucx4j"))
        ran = any(r["row"] == row and r["peer_error_handling"] == peh for r in runs)
        if not ran:
            continue
        ratio = uj / pt if pt and uj is not None else None
        summary.append({"row": row, "metric": metric, "peer_error_handling": peh, "ucx_perftest": pt, "ucx4j": uj,
                        "ratio": ratio, "runs": [n((peh, row, metric, "ucx_perftest")), n((peh, row, metric, "ucx4j"))]})
        lines.append(f"| {row} | {test} | {size} | {label} | {peh} | {fmt(pt, metric)} | {fmt(uj, metric)} | "
                     + ("-" if ratio is None else f"{ratio:.2f}") + " |")
comm = [r for r in ("comm_ucx", "comm_tcp") if any(x["row"] == r for x in runs)]
if comm:
    lines += ["", "| comm row | peer error handling | core tag 64 MiB, MB/s | comm 64 MiB, MB/s | comm / core tag "
              "(median of per-round ratios) | comm / pinned copy |", "|---|---|---|---|---|---|"]
    for row in comm:
        for peh in pehs:
            c, t = per_round.get((peh, row, "bw", "ucx4j"), {}), per_round.get((peh, "tag_bw_64Mi", "bw", "ucx4j"), {})
            if not any(x["row"] == row and x["peer_error_handling"] == peh for x in runs):
                continue
            ratios = [c[r] / t[r] for r in c if r in t and t[r]]
            ratio = statistics.median(ratios) if ratios else None
            mc = med.get((peh, row, "bw", "ucx4j"))
            to_pinned = mc / pinned if pinned and mc is not None else None
            summary.append({"row": row, "metric": "bw", "peer_error_handling": peh, "ucx4j": mc,
                            "core_tag_64Mi": med.get((peh, "tag_bw_64Mi", "bw", "ucx4j")), "ratio_to_core_tag": ratio,
                            "ratio_to_pinned_copy": to_pinned})
            lines.append(f"| {row.replace('comm_', '')}:// | {peh} | {fmt(med.get((peh, 'tag_bw_64Mi', 'bw', 'ucx4j')), 'bw')} | "
                         f"{fmt(mc, 'bw')} | " + ("-" if ratio is None else f"{ratio:.2f}") + " | "
                         + ("-" if to_pinned is None else f"{to_pinned:.2f}") + " |")
if "error" in ref:
    lines += ["", f"reference copies (CuPy): none ({ref['error']})"]
else:
    lines += ["", f"reference copies (CuPy, 64 MiB, {ref['iterations']} each, GPU {ref['from_gpu']} -> GPU {ref['to_gpu']}): "
              f"pinned host -> device {fmt(ref['h2d_pinned_mbps'], 'bw')} MB/s, device -> pinned host "
              f"{fmt(ref['d2h_pinned_mbps'], 'bw')} MB/s, device -> device {fmt(ref['d2d_mbps'], 'bw')} MB/s; "
              "'pinned copy' above is the slower of the first two."]
failed = [f"{r['tool']} {r['row']} (round {r['round']}, peer error handling {r['peer_error_handling']})" for r in runs if r["metric"] == "failed"]
lines += ["", f"each cell: the median of its runs, in {meta['rounds_done']} complete alternating rounds of {meta['rounds_planned']} planned; "
          f"{meta['seconds']} s in all; load average {meta['load_start']} at the start, {meta['load_end']} at the end. "
          "Latency: one-way (half a round trip), usec; bandwidth: MB/s, MB = 2^20 bytes. "
          "Peer error handling: on = ucx_perftest -e and ucx4j's default; off = ucx_perftest's default and "
          "UCX4J__PEER_ERROR_HANDLING=false. Iterations: " + ", ".join(f"{k} {v}" for k, v in meta["iterations"].items()) + "."]
if meta["stopped"]:
    lines.append(meta["stopped"] + ".")
if failed:
    lines.append("failed runs (left out): " + "; ".join(failed) + ".")
table = "\n".join(lines)
print(table)
meta.update(summary=summary, runs=runs)
with open(json_path, "w") as f:
    json.dump(meta, f, indent=1)
if table_path:
    with open(table_path, "w") as f:
        f.write(table + "\n")
PY
echo "raw figures: $JSON_FILE" >&2
exit $FAILED
