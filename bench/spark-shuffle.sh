#!/usr/bin/env bash
# Spark's shuffle over ucx4j beside Spark's own (Netty), on a real standalone cluster built from Maven's
# jars (no Spark download): a master, a worker and 2 executors of one core each, all on 127.0.0.1. The
# job (ShuffleBenchApp: a sort and a group-by over generated 100-byte records, about --size-mb MB of
# them) runs once per shuffle, alternating (Netty first in odd rounds, last in even ones), ROUNDS times; both
# must give identical results. Prints one
# JSON line per run (shuffle manager, transport, bytes shuffled, bytes Spark read remotely, bytes fetched
# through ucx4j, job seconds, fetch wait seconds, result digest, and a timeline of executors and stages),
# then a Markdown table of the medians with the ratios ucx4j / Netty and one of where the time went per
# stage, and writes an HTML page with the chart (--html). KEEP_RUN=1 keeps the run's directory (the
# executors' logs under work/) and says where.
#
# spark.shuffle.readHostLocalDisk=false in both runs: the executors share this host, and with host-local
# reads on they would read each other's files and neither transport would carry anything.
#
#   bench/spark-shuffle.sh --quick                 # ~20 MB, one round: about a minute once built (idle machine)
#   bench/spark-shuffle.sh --size-mb 2400 --executor-memory 3g --html /tmp/spark.html
#   bench/spark-shuffle.sh --transport tcp         # ucx4j over tcp:// instead of ucx://
#   ROUNDS=3 bench/spark-shuffle.sh --size-mb 500
#   ROUNDS=5 BEFORE_PLUGIN=/tmp/old-all.jar bench/spark-shuffle.sh --quick   # A/B: an older plug-in jar
#                                  # runs too in each round (label "before"); a second table compares them
#   bench/spark-shuffle.sh --executors 4 --executor-cores 4 --executor-memory 8g --size-mb 9000   # a larger machine
#   bench/spark-shuffle.sh --ucx4j-conf same-host-shared-memory=false   # spark.ucx4j.KEY=VALUE for ucx4j's runs
#   bench/spark-shuffle.sh --pack DIR      # build, then write what a run needs into DIR and stop (no run)
#   bench/spark-shuffle.sh --prebuilt DIR  # run from such a DIR: no Maven, no build (bench/spark-device.sh)
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bin/find-jdk
source "$ROOT/bin/find-jdk"
SIZE_MB=200
TRANSPORT=ucx
HTML=spark-shuffle.html
EXEC_MEM=1g
PARTITIONS=8
EXECUTORS=2
EXEC_CORES=1
PACK_TO=
PREBUILT=
UCX4J_CONF=()
ROUNDS=${ROUNDS:-1}
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) SIZE_MB=20; PARTITIONS=4 ;;
        --size-mb) SIZE_MB=$2; shift ;;
        --partitions) PARTITIONS=$2; shift ;;
        --transport) TRANSPORT=$2; shift ;;
        --executor-memory) EXEC_MEM=$2; shift ;;
        --executors) EXECUTORS=$2; shift ;;
        --executor-cores) EXEC_CORES=$2; shift ;;
        --pack) PACK_TO=$2; shift ;;
        --ucx4j-conf) UCX4J_CONF+=(--conf "spark.ucx4j.$2"); shift ;;
        --prebuilt) PREBUILT=$2; shift ;;
        --html) HTML=$2; shift ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "spark-shuffle.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ -n "$PREBUILT" ]; then
    # Everything from DIR: jars/ (Spark's class path), ucx4j-spark-all.jar, app.jar; java from SPARK_JAVA_HOME,
    # else JAVA_HOME (Spark's launcher runs the JVMs from JAVA_HOME).
    PREBUILT=$(cd "$PREBUILT" && pwd)
    export JAVA_HOME=${SPARK_JAVA_HOME:-${JAVA_HOME:?--prebuilt needs JAVA_HOME or SPARK_JAVA_HOME}}
    JAVA="$JAVA_HOME/bin/java"
    PLUGIN="$PREBUILT/ucx4j-spark-all.jar"
    for f in "$PREBUILT/jars" "$PLUGIN" "$PREBUILT/app.jar" "$JAVA"; do
        [ -e "$f" ] || { echo "spark-shuffle.sh: --prebuilt $PREBUILT lacks $f" >&2; exit 2; }
    done
else
    ucx4j_find_jdk javac
    JAVA="$UCX4J_JAVA_HOME/bin/java"
    export JAVA_HOME=$UCX4J_JAVA_HOME MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow ${MAVEN_OPTS:-}"
    VERSION=$(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' "$ROOT/pom.xml" | head -1)
    PLUGIN="$ROOT/ucx4j-spark/target/ucx4j-spark-$VERSION-all.jar"
fi
CACHE="$ROOT/build-cache/spark-home"
RUN=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "${KEEP_RUN:-}" ]; then echo "kept $RUN" >&2; else rm -rf "$RUN"; fi
}
trap cleanup EXIT

if [ -n "$PREBUILT" ]; then
    CACHE="$RUN/spark-home"
    mkdir -p "$CACHE" && ln -s "$PREBUILT/jars" "$CACHE/jars"
    cp "$PREBUILT/app.jar" "$RUN/app.jar"
else
    # The plug-in jar, the bench application, and the class path of Spark 4.2.0 from Maven (ucx4j-spark's
    # provided scope; -am so that the reactor resolves ucx4j's own modules; ucx4j-spark writes the file last).
    echo "building ucx4j-spark (plug-in jar and the bench application)..." >&2
    mkdir -p "$CACHE"
    (cd "$ROOT" && ./mvnw -B -q -o package dependency:build-classpath -pl ucx4j-spark -am -DskipTests \
        -Dmaven.javadoc.skip=true -Dspotless.check.skip=true -Dmaven.source.skip=true \
        -Dmdep.includeScope=provided -Dmdep.outputFile="$CACHE/classpath.txt")
    # A Spark home from Maven's jars: RELEASE and jars/ (links to Spark and its dependencies, none of ucx4j).
    rm -rf "$CACHE/jars" && mkdir -p "$CACHE/jars"
    tr ':' '\n' <"$CACHE/classpath.txt" | while read -r j; do ln -sf "$j" "$CACHE/jars/"; done
    # The application jar: ShuffleBenchApp's classes only.
    (cd "$ROOT/ucx4j-spark/target/test-classes" && "$UCX4J_JAVA_HOME/bin/jar" cf "$RUN/app.jar" org/ucx4j/spark/ShuffleBenchApp*.class)
    if [ -n "$PACK_TO" ]; then
        mkdir -p "$PACK_TO/jars"
        cp -L "$CACHE"/jars/*.jar "$PACK_TO/jars/"
        cp "$PLUGIN" "$PACK_TO/ucx4j-spark-all.jar"
        cp "$RUN/app.jar" "$PACK_TO/app.jar"
        echo "spark-shuffle.sh: packed $(du -sh "$PACK_TO" | cut -f1) into $PACK_TO" >&2
        exit 0
    fi
fi
echo "Spark 4.2.0 from Maven jars (ucx4j bench/spark-shuffle.sh)" >"$CACHE/RELEASE"
export SPARK_HOME=$CACHE SPARK_SCALA_VERSION=2.13 SPARK_LOCAL_IP=127.0.0.1
unset SPARK_TESTING

# spark-class: Spark's launcher prints the command (NUL-separated), with Spark's JVM options; into CMD.
spark_command() {
    CMD=()
    local arg
    while IFS= read -r -d '' arg; do
        arg=${arg#$'\n'}
        [ -n "$arg" ] && CMD+=("$arg")
    done < <("$JAVA" -Xmx128m -cp "$SPARK_HOME/jars/*" org.apache.spark.launcher.Main "$@")
}

await_line() { # FILE PATTERN SECONDS
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "spark-shuffle.sh: no '$2' in $1 after $3 s:" >&2
    tail -20 "$1" >&2
    exit 1
}

echo "starting a standalone master and worker on 127.0.0.1..." >&2
spark_command org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 0 --webui-port 0
"${CMD[@]}" >"$RUN/master.log" 2>&1 &
PIDS+=($!) # the JVM itself, so that the trap stops it
await_line "$RUN/master.log" "Starting Spark master at" 60
MASTER=$(grep -o 'spark://127.0.0.1:[0-9]*' "$RUN/master.log" | head -1)
case "$EXEC_MEM" in
    *g|*G) EXEC_MIB=$(( ${EXEC_MEM%[gG]} * 1024 )) ;;
    *m|*M) EXEC_MIB=${EXEC_MEM%[mM]} ;;
    *) echo "spark-shuffle.sh: --executor-memory takes 1g or 1500m, not $EXEC_MEM" >&2; exit 2 ;;
esac
WORKER_MEM=$(( EXEC_MIB * EXECUTORS + 1024 ))m
spark_command org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --webui-port 0 --cores $((EXECUTORS * EXEC_CORES)) --memory "$WORKER_MEM" \
    --work-dir "$RUN/work" "$MASTER"
"${CMD[@]}" >"$RUN/worker.log" 2>&1 &
PIDS+=($!)
await_line "$RUN/worker.log" "Successfully registered with master" 60

COMMON=(--master "$MASTER" --conf "spark.executor.cores=$EXEC_CORES" --conf "spark.cores.max=$((EXECUTORS * EXEC_CORES))" --conf "spark.executor.memory=$EXEC_MEM"
    --conf spark.driver.host=127.0.0.1 --conf spark.ui.enabled=false --conf spark.shuffle.readHostLocalDisk=false
    --conf spark.serializer=org.apache.spark.serializer.KryoSerializer --conf spark.ui.showConsoleProgress=false
    --class org.ucx4j.spark.ShuffleBenchApp)
# SPARK_EXTRA_CONF="k=v k=v": more Spark settings for every run (e.g. executors' JVM options for a profile).
for c in ${SPARK_EXTRA_CONF:-}; do COMMON+=(--conf "$c"); done
APP=("$RUN/app.jar" --size-mb "$SIZE_MB" --partitions "$PARTITIONS")

run() { # LABEL SPARK-SUBMIT-OPTIONS...
    local label=$1
    shift
    spark_command org.apache.spark.deploy.SparkSubmit "${COMMON[@]}" "$@" "${APP[@]}" --label "$label"
    if ! "${CMD[@]}" >"$RUN/$label.out" 2>"$RUN/$label.err"; then
        echo "spark-shuffle.sh: the $label run failed:" >&2
        tail -30 "$RUN/$label.err" >&2
        exit 1
    fi
    grep '^{' "$RUN/$label.out" | tail -1 | tee -a "$RUN/results.jsonl"
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $SIZE_MB MB, $PARTITIONS partitions, $ROUNDS round(s)" >&2
run_before() {
    run before --jars "$BEFORE_PLUGIN" --conf spark.shuffle.manager=org.ucx4j.spark.UcxShuffleManager \
        --conf "spark.ucx4j.transport=$TRANSPORT"
}
run_ucx4j() {
    run ucx4j --jars "$PLUGIN" --conf spark.shuffle.manager=org.ucx4j.spark.UcxShuffleManager \
        --conf "spark.ucx4j.transport=$TRANSPORT" ${UCX4J_CONF[@]+"${UCX4J_CONF[@]}"}
}
# Odd rounds run Netty first, even rounds last (ABBA): a machine that speeds up or slows down during the run
# (a cold page cache at the start: the 2 GiB runs of session 19 went from 33 to 26 s) then favours neither.
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2 == 1)); then
        run netty
        [ -z "${BEFORE_PLUGIN:-}" ] || run_before
        run_ucx4j
    else
        run_ucx4j
        [ -z "${BEFORE_PLUGIN:-}" ] || run_before
        run netty
    fi
done
grep -h "ucx4j shuffle: remote blocks travel" "$RUN"/work/*/*/stderr | sed 's/.*INFO [A-Za-z]*: /executor: /' | sort -u >&2 || true
# Refusals and retries in the executors' logs (ucx4j's handshake gate, Spark's fetch retries): a run that
# had any says so, with the first few lines.
problems=$(grep -h -e "refused" -e "Retrying fetch" -e "cut short" "$RUN"/work/*/*/stderr 2>/dev/null || true)
if [ -n "$problems" ]; then
    echo "executors logged $(wc -l <<<"$problems") refusal/retry line(s), first ones:" >&2
    head -5 <<<"$problems" >&2
fi

python3 - "$RUN/results.jsonl" "$HTML" "$SIZE_MB" "$(nproc)" "$(uname -srm)" "$EXECUTORS" "$EXEC_CORES" <<'EOF'
import html, json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out, size_mb, cores, machine, executors, exec_cores = sys.argv[2:8]
by = {"netty": [r for r in rows if r["label"] == "netty"], "ucx4j": [r for r in rows if r["label"] == "ucx4j"]}
results = {r["result"] for r in rows}
if len(results) != 1:
    sys.exit("spark-shuffle.sh: the runs disagree: " + " | ".join(sorted(results)))
for r in by["ucx4j"]:
    if r["bytesFetchedViaUcx4j"] <= 0:
        sys.exit("spark-shuffle.sh: a ucx4j run fetched nothing through ucx4j: " + json.dumps(r))
med = lambda label, key: statistics.median(r[key] for r in by[label])
metrics = [("job seconds", "jobSeconds"), ("fetch wait seconds", "fetchWaitSeconds")]
transport = by["ucx4j"][0]["transport"]
print()
print(f"| {size_mb} MB, {len(by['netty'])} round(s) | Netty | ucx4j ({transport}://) | ucx4j / Netty |")
print("|---|---:|---:|---:|")
for name, key in metrics:
    n, u = med("netty", key), med("ucx4j", key)
    print(f"| {name} (median) | {n:.2f} | {u:.2f} | {u / n if n else float('nan'):.2f} |")
print(f"| bytes shuffled | {med('netty', 'bytesShuffled'):,.0f} | {med('ucx4j', 'bytesShuffled'):,.0f} | |")
print(f"| bytes read remotely | {med('netty', 'remoteBytesRead'):,.0f} | {med('ucx4j', 'remoteBytesRead'):,.0f} | |")
print(f"| bytes fetched through ucx4j | 0 | {med('ucx4j', 'bytesFetchedViaUcx4j'):,.0f} | |")
before = [r for r in rows if r["label"] == "before"]
if before:
    by["before"] = before
    print(f"\n| A/B, {len(before)} round(s), medians | Netty | ucx4j before | ucx4j after | after / before |")
    print("|---|---:|---:|---:|---:|")
    for name, key in metrics:
        n, b, u = med("netty", key), med("before", key), med("ucx4j", key)
        print(f"| {name} | {n:.2f} | {b:.2f} | {u:.2f} | {u / b if b else float('nan'):.2f} |")
    print("per round, job seconds (netty, before, after): " + "; ".join(
        f"{n['jobSeconds']:.2f} {b['jobSeconds']:.2f} {u['jobSeconds']:.2f}"
        for n, b, u in zip(by["netty"], before, by["ucx4j"])))
    del by["before"]
# Where the job's time went (ShuffleBenchApp's "timeline"): per stage, the median of its time from submission
# to completion, and of its tasks' run and deserialisation time (summed over the stage's tasks), in seconds.
# Stage 0 is the sort's sampling job: it runs while the executors start (and ucx4j's start overlaps it).
stage_ids = []
if all("timeline" in r for r in rows):
    stage_ids = sorted({s[0] for r in rows for s in r["timeline"]["stages"]})
    def stage(label, sid, f):
        vals = [f(s) for r in by[label] for s in r["timeline"]["stages"] if s[0] == sid]
        return statistics.median(vals) / 1e3 if vals else float("nan")
    print("\n| stage (medians, s) | Netty: wall | ucx4j: wall | Netty: task run | ucx4j: task run "
          "| Netty: task deserialise | ucx4j: task deserialise |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for sid in stage_ids:
        cells = []
        for f in (lambda s: s[2] - s[1], lambda s: s[5], lambda s: s[6]):
            cells += [stage("netty", sid, f), stage("ucx4j", sid, f)]
        print(f"| {sid} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    first = lambda label: statistics.median(
        min(int(e.split("@")[1]) for e in r["timeline"]["executors"]) for r in by[label] if r["timeline"]["executors"])
    print(f"first executor added after the jobs started (median): Netty {first('netty') / 1e3:.2f} s, "
          f"ucx4j {first('ucx4j') / 1e3:.2f} s")
print(f"\nresults identical: {results.pop()}")

# The chart: grouped bars, the demo's colours (ucx4j blue, the other transport orange).
w, h, left, top, bar = 640, 300, 160, 50, 28
peak = max(max(med(l, k) for l in by) for _, k in metrics) or 1
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
       f'aria-label="Spark shuffle: ucx4j vs Netty" font-family="sans-serif" font-size="12">',
       f'<text x="{w // 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">'
       f'Spark shuffle, {html.escape(size_mb)} MB: seconds (lower is better)</text>']
for i, (name, key) in enumerate(metrics):
    y = top + i * 110
    svg.append(f'<text x="{left - 8}" y="{y + bar + 4}" text-anchor="end">{html.escape(name)}</text>')
    for j, (label, colour) in enumerate((("ucx4j", "#1f77b4"), ("netty", "#ff7f0e"))):
        v = med(label, key)
        bw = (w - left - 90) * v / peak
        yy = y + j * (bar + 6)
        svg.append(f'<rect x="{left}" y="{yy}" width="{bw:.1f}" height="{bar}" fill="{colour}"/>')
        svg.append(f'<text x="{left + bw + 6:.1f}" y="{yy + bar - 9}">{label} {v:.2f} s</text>')
svg.append('</svg>')
# A second chart, where the timeline exists: each stage's wall time (submission to completion), medians.
stage_svg = []
if stage_ids:
    sh = top + len(stage_ids) * 72
    speak = max(stage(l, sid, lambda s: s[2] - s[1]) for l in ("netty", "ucx4j") for sid in stage_ids) or 1
    stage_svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{sh}" role="img" '
                 f'aria-label="Spark shuffle: seconds per stage" font-family="sans-serif" font-size="12">',
                 f'<text x="{w // 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">'
                 f'Seconds per stage, submission to completion (lower is better)</text>']
    names = {0: "0: sort's sampling", 1: "1: sort, map", 2: "2: sort, reduce", 3: "3: group-by, map",
             4: "4: group-by, reduce"}
    for i, sid in enumerate(stage_ids):
        y = top + i * 72
        stage_svg.append(f'<text x="{left - 8}" y="{y + 24}" text-anchor="end">'
                         f'{html.escape(names.get(sid, str(sid)))}</text>')
        for j, (label, colour) in enumerate((("ucx4j", "#1f77b4"), ("netty", "#ff7f0e"))):
            v = stage(label, sid, lambda s: s[2] - s[1])
            bw = (w - left - 90) * v / speak
            yy = y + j * 26
            stage_svg.append(f'<rect x="{left}" y="{yy}" width="{bw:.1f}" height="22" fill="{colour}"/>')
            stage_svg.append(f'<text x="{left + bw + 6:.1f}" y="{yy + 15}">{label} {v:.2f} s</text>')
    stage_svg.append('</svg>')
table = "".join(
    f"<tr><td>{html.escape(n)}</td><td class=n>{med('netty', k):.2f}</td><td class=n>{med('ucx4j', k):.2f}</td>"
    f"<td class=n>{med('ucx4j', k) / med('netty', k) if med('netty', k) else float('nan'):.2f}</td></tr>"
    for n, k in metrics)
page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>ucx4j: Spark shuffle over ucx4j vs Netty</title>
<style>
body{{font-family:sans-serif;max-width:820px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px}}
td.n{{text-align:right;font-variant-numeric:tabular-nums}}th{{background:#f4f4f4}}
figure{{margin:1.5em 0}}code{{background:#f4f4f4;padding:0 3px}}
</style></head><body>
<h1>Spark shuffle: ucx4j ({html.escape(transport)}://) vs Netty</h1>
<p>Standalone cluster on 127.0.0.1, {executors} executors of {exec_cores} core(s), {html.escape(size_mb)} MB of generated records,
sort and group-by; {len(by['netty'])} round(s), medians. Machine: {html.escape(machine)}, {cores} cores.
Results identical in every run; bytes fetched through ucx4j: {med('ucx4j', 'bytesFetchedViaUcx4j'):,.0f}.</p>
<figure>{''.join(svg)}</figure>
{('<figure>' + ''.join(stage_svg) + '</figure><p>Stage 0 runs while the executors start (ucx4j starts in the '
  'background there); the reduce stages are where the shuffle fetches.</p>') if stage_svg else ''}
<table><tr><th>seconds</th><th>Netty</th><th>ucx4j</th><th>ucx4j / Netty</th></tr>{table}</table>
<p>Command: <code>bench/spark-shuffle.sh --size-mb {html.escape(size_mb)}</code></p>
<p>Raw runs:</p><pre>{html.escape(chr(10).join(json.dumps(r) for r in rows))}</pre>
</body></html>
"""
open(out, "w").write(page)
print(f"chart: {out}", file=sys.stderr)
EOF
