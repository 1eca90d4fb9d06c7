#!/usr/bin/env bash
# UCX's shared memory settings for same-host workers (session 15): `ucx4j bench --comm ucx` (its
# same-host workers take the settings from the environment only where SameHost.java does not set them:
# run it against a build without them, or read the perftest rows) and tcp://, then ucx_perftest tag_bw -e
# on sysv,cma, for each of CFG below, ROUNDS rounds (default 2), each figure printed as it comes (MB/s,
# window 16). ucx_perftest does not check what it received. Used for docs/BENCHMARKS.md "Same-host
# segments":  bin/gpu-run shell bench/mm-settings.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
export BENCH_RUN_TIMEOUT=30
ROUNDS=${ROUNDS:-2}
BASE="UCX_TLS=sysv,cma UCX_MM_ERROR_HANDLING=y UCX_SYSV_ERROR_HANDLING=y UCX_POSIX_ERROR_HANDLING=y"
declare -a CFG=("X=0" "UCX_SYSV_SEG_SIZE=32832" "UCX_SYSV_SEG_SIZE=49216" "UCX_SYSV_SEG_SIZE=32832 UCX_SYSV_RX_BUFS_GROW=128")
for r in $(seq $ROUNDS); do
  for s in 1Mi 64Mi; do
    for i in "${!CFG[@]}"; do
      bw=$(env ${CFG[$i]} timeout 40 "$ROOT/bin/ucx4j" bench --comm ucx --mode bandwidth --size $s --window 16 --no-progress-bar --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["bandwidth_mbps"])' 2>/dev/null)
      echo "comm r$r $s [${CFG[$i]}] $bw"
    done
    bw=$(timeout 40 "$ROOT/bin/ucx4j" bench --comm tcp --mode bandwidth --size $s --window 16 --no-progress-bar --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["bandwidth_mbps"])' 2>/dev/null)
    echo "tcp r$r $s $bw"
  done
  for s in 1048576 67108864; do
    it=5000; [ $s -gt 16000000 ] && it=300
    for i in 0 1 2; do
      csv=$(bench_perftest "$BASE ${CFG[$i]}" "$BASE ${CFG[$i]}" "-e" "-t tag_bw -s $s -n $it -O 16 -e") || continue
      IFS=, read -r _ _ _ _ _ bw _ _ <<<"$csv"; echo "perftest r$r $s [${CFG[$i]}] $bw"
    done
  done
done
