#!/usr/bin/env bash
# Which of UCXX's CUDA defaults (UCX_RNDV_THRESH=8192, UCX_MEMTYPE_CACHE=n, UCX_RNDV_FRAG_MEM_TYPE=cuda;
# ucx4j applies them where unset) cost what on this GPU: ucx_perftest tag_bw -m cuda and ucx4j bench
# --memory cuda at 1 MiB and 64 MiB, two processes on GPU 0, peer error handling on (-e), for each
# setting alone, all three, and none (UCX's own defaults, set explicitly so that ucx4j adds nothing).
# One run per cell (a quick matrix, not a ratio table: bench/vs-perftest-gpu.sh is that).
# Bandwidth in MB/s, MB = 2^20 bytes.
#
#   bench/gpu-ucx-settings.sh            # on a GPU machine (bin/gpu-run shell bench/gpu-ucx-settings.sh)
#   SETS_TO_RUN="none ucxx_all" bench/gpu-ucx-settings.sh   # some of the settings
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
UCX4J=${UCX4J:-$ROOT/bin/ucx4j}
NONE="UCX_RNDV_THRESH=auto UCX_MEMTYPE_CACHE=y UCX_RNDV_FRAG_MEM_TYPE=host"
declare -A SETS=(
    [none]="$NONE"
    [rndv_thresh_8192]="UCX_RNDV_THRESH=8192 UCX_MEMTYPE_CACHE=y UCX_RNDV_FRAG_MEM_TYPE=host"
    [memtype_cache_n]="UCX_RNDV_THRESH=auto UCX_MEMTYPE_CACHE=n UCX_RNDV_FRAG_MEM_TYPE=host"
    [frag_mem_cuda]="UCX_RNDV_THRESH=auto UCX_MEMTYPE_CACHE=y UCX_RNDV_FRAG_MEM_TYPE=cuda"
    [ucxx_all]="UCX_RNDV_THRESH=8192 UCX_MEMTYPE_CACHE=n UCX_RNDV_FRAG_MEM_TYPE=cuda"
)
echo "| settings | size | ucx_perftest tag_bw, MB/s | ucx4j tag bandwidth, MB/s | ratio |"
echo "|---|---|---|---|---|"
for name in ${SETS_TO_RUN:-none rndv_thresh_8192 memtype_cache_n frag_mem_cuda ucxx_all}; do
    envs=${SETS[$name]}
    for size in 1048576 67108864; do
        iters=$((size > 1048576 ? 300 : 3000))
        csv=$(bench_perftest "CUDA_VISIBLE_DEVICES=0 $envs" "CUDA_VISIBLE_DEVICES=0 $envs" "-e" \
            "-t tag_bw -m cuda -e -s $size -n $iters" || echo "")
        pt=$(echo "$csv" | cut -d, -f6)
        # shellcheck disable=SC2086 # envs is a word list
        j=$(env $envs "$UCX4J" bench --op tag --mode bandwidth --memory cuda --size "$size" --iters "$iters" \
            --warmup-time 1 --json 2>/dev/null || echo "{}")
        u=$(echo "$j" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("bandwidth_mbps") or "")' 2>/dev/null || echo "")
        ratio=$(python3 -c "import sys; a,b=sys.argv[1:]; print(f'{float(b)/float(a):.2f}' if a and b else '-')" "$pt" "$u")
        printf '| %s | %s | %s | %s | %s |\n' "$name" "$size" "${pt:--}" "${u:--}" "$ratio"
    done
done
