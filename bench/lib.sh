# shellcheck shell=bash
# What the bench/ scripts that run ucx_perftest beside ucx4j share. Source it.
#
#   bench_loadavg                      the 1, 5 and 15 minute load averages
#   bench_perftest SENV CENV SARGS CARGS   one ucx_perftest server/client pair; prints the client's CSV
#
# Environment: UCX_PERFTEST (the command, default ucx_perftest), BENCH_RUN_TIMEOUT (seconds one
# perftest client may run, default 120), BENCH_PORT (where the ports start; each run takes another).

bench_loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

BENCH_PORT=${BENCH_PORT:-$((20000 + RANDOM % 10000))}

# bench_listening PORT: whether a TCP socket listens on PORT. Reads /proc/net (no ss(8) needed) and
# never connects: a probe would be the one client the perftest server accepts.
bench_listening() {
    local hex
    hex=$(printf '%04X' "$1")
    grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# bench_perftest SERVER_ENV CLIENT_ENV SERVER_ARGS CLIENT_ARGS: starts `ucx_perftest SERVER_ARGS -p PORT`
# under `env SERVER_ENV` (words such as CUDA_VISIBLE_DEVICES=0 or -u UCX_TLS; may be empty), waits
# until it listens, runs `ucx_perftest 127.0.0.1 CLIENT_ARGS -p PORT -v` under `env CLIENT_ENV`, and
# prints the client's last line, its CSV: iterations,p50_lat,avg_lat,overall_lat,avg_bw,overall_bw,
# avg_mr,overall_mr. On failure prints the client's output to stderr and returns 1. Arguments are
# split on blanks (none of them has one). Each run takes a port of its own, also when called in
# $(...): a subshell forgets the counter's increment, so the port mixes in the shell's own pid too,
# and skips ports something listens on. (A reused port can still hold the last run's connection in
# TIME_WAIT, and the server then fails to bind.)
bench_perftest() {
    local senv="$1" cenv="$2" sargs="$3" cargs="$4" port server out status=0 line
    local perftest=${UCX_PERFTEST:-ucx_perftest}
    BENCH_PORT=$((BENCH_PORT + 1))
    port=$((20000 + (BENCH_PORT + BASHPID) % 20000))
    while bench_listening "$port"; do port=$((port + 1)); done
    out=$(mktemp)
    # shellcheck disable=SC2086 # word lists
    env $senv "$perftest" $sargs -p "$port" >/dev/null 2>&1 &
    server=$!
    for _ in $(seq 100); do
        bench_listening "$port" && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.05
    done
    # shellcheck disable=SC2086 # word lists
    timeout -k 5 "${BENCH_RUN_TIMEOUT:-120}" env $cenv "$perftest" 127.0.0.1 $cargs -p "$port" -v >"$out" 2>&1 \
        || status=$?
    line=$(tail -n 1 "$out")
    if [ $status -ne 0 ] || ! [[ "$line" =~ ^\ *[0-9]+, ]]; then
        echo "ucx_perftest $cargs failed (exit $status):" >&2
        tail -n 20 "$out" >&2
        status=1
    fi
    rm -f "$out"
    # The server exits after its one client; one that does not (the client failed early) is stopped.
    for _ in $(seq 50); do
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    [ $status -ne 0 ] || echo "$line"
    return $status
}
