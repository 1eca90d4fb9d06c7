#!/usr/bin/env bash
# Spark's shuffle benchmark (bench/spark-shuffle.sh) on the lent GPU machine, which has no Java, Maven or
# network and takes 64 MiB a call: Spark's class path (~230 MB from Maven; ~165 MB once the native code of
# other platforms is dropped) travels in parts over several calls to a machine kept warm.
#
#   bench/spark-device.sh pack           # here: .spark/part-N/ (each <= PART_MIB, default 56), then say how
#                                        # to carry them; one of them holds a JDK 25 runtime Spark runs on (jlink)
#   bench/spark-device.sh receive        # there, once per part carried (carry [".spark/part-N"]): checks it
#                                        # and moves it to $SPARK_STORE (default /tmp/ucx4j-spark), outside
#                                        # the working tree, where the next call does not remove it
#   bench/spark-device.sh run ARGS...    # there, with .gpu carried (its UCX): unpacks what was received
#                                        # (refusing when a part is missing) and runs
#                                        # bench/spark-shuffle.sh --prebuilt ... ARGS under bin/gpu-run's
#                                        # environment (UCX 1.22 of the wheel)
#
# A part is a set of plain tar files plus MANIFEST (name, bytes, sha256 of each) and PARTS (how many
# parts there are); `receive` verifies the checksums, `run` that every part arrived.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
CARRY="$ROOT/.spark"
STORE=${SPARK_STORE:-/tmp/ucx4j-spark}
PART_MIB=${PART_MIB:-56}
say() { echo "spark-device: $*" >&2; }

# Java modules for Spark 4.2 and its dependencies (Hadoop's client, Jetty, Kryo, log4j, ...): the SE set
# and the jdk.* modules Spark reaches (its launcher adds jdk.incubator.vector; Unsafe, management, JFR for
# profiling, zip file systems, DNS).
JRE_MODULES=java.se,jdk.incubator.vector,jdk.unsupported,jdk.management,jdk.jfr,jdk.zipfs,jdk.crypto.ec,jdk.naming.dns,jdk.net,jdk.security.auth,jdk.security.jgss,jdk.charsets,jdk.httpserver

cmd_pack() {
    # shellcheck source=bin/find-jdk
    source "$ROOT/bin/find-jdk"
    ucx4j_find_jdk javac
    local stage
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' RETURN
    "$ROOT/bench/spark-shuffle.sh" --pack "$stage/prebuilt" >&2
    # Other platforms' native code: netty-tcnative's per-platform jars, and RocksDB's libraries for them.
    rm -f "$stage"/prebuilt/jars/netty-tcnative-boringssl-static-*-{linux-aarch_64,osx-*,windows-*}.jar
    local rocks
    for rocks in "$stage"/prebuilt/jars/rocksdbjni-*.jar; do
        [ -e "$rocks" ] || continue
        (cd "$stage" && mkdir rocks && cd rocks && "$UCX4J_JAVA_HOME/bin/jar" xf "$rocks" \
            && find . -name 'librocksdbjni-*' ! -name 'librocksdbjni-linux64.so' -delete \
            && "$UCX4J_JAVA_HOME/bin/jar" cfm "$rocks.new" META-INF/MANIFEST.MF . && mv "$rocks.new" "$rocks") \
            && rm -rf "$stage/rocks"
    done
    say "linking a Java runtime for Spark ($JRE_MODULES)..."
    "$UCX4J_JAVA_HOME/bin/jlink" --add-modules "$JRE_MODULES" --strip-debug --no-man-pages --no-header-files \
        --output "$stage/jre"
    tar -C "$stage" -cJf "$stage/jre.tar.xz" jre
    # Files to spread over parts: the runtime, the two ucx4j jars, and the class path's jars in tars.
    local files=("$stage/jre.tar.xz")
    tar -C "$stage/prebuilt" -cf "$stage/ucx4j.tar" ucx4j-spark-all.jar app.jar
    files+=("$stage/ucx4j.tar")
    local limit=$((PART_MIB * 1024 * 1024)) n=0 size=0 jar group=()
    flush() {
        [ ${#group[@]} -gt 0 ] || return 0
        n=$((n + 1))
        tar -C "$stage/prebuilt" -cf "$stage/jars-$n.tar" "${group[@]}"
        files+=("$stage/jars-$n.tar")
        group=() size=0
    }
    while IFS= read -r jar; do
        local b
        b=$(stat -c %s "$stage/prebuilt/$jar")
        if [ $((size + b)) -gt $((limit - 4 * 1024 * 1024)) ]; then flush; fi
        group+=("$jar") size=$((size + b))
    done < <(cd "$stage/prebuilt" && find jars -name '*.jar' -printf '%s %p\n' | sort -rn | cut -d' ' -f2)
    flush
    # First fit, largest first, into parts of at most PART_MIB.
    rm -rf "$CARRY" && mkdir -p "$CARRY"
    local parts=0 f placed p
    declare -A used=()
    while IFS= read -r f; do
        local b
        b=$(stat -c %s "$f")
        placed=
        for ((p = 1; p <= parts; p++)); do
            if [ $((used[$p] + b)) -le "$limit" ]; then placed=$p && break; fi
        done
        if [ -z "$placed" ]; then
            parts=$((parts + 1)) placed=$parts used[$parts]=0
            mkdir -p "$CARRY/part-$placed"
        fi
        mv "$f" "$CARRY/part-$placed/"
        used[$placed]=$((used[$placed] + b))
    done < <(for f in "${files[@]}"; do printf '%s %s\n' "$(stat -c %s "$f")" "$f"; done | sort -rn | cut -d' ' -f2)
    for ((p = 1; p <= parts; p++)); do
        (cd "$CARRY/part-$p" && sha256sum -- * >MANIFEST && echo "$parts" >PARTS)
        say "part $p of $parts: $(du -sh "$CARRY/part-$p" | cut -f1) ($(ls "$CARRY/part-$p" | grep -v -e MANIFEST -e PARTS | tr '\n' ' '))"
    done
    say "carry each as [\".spark/part-N\"] with 'bench/spark-device.sh receive', calls back to back (the machine"
    say "goes back after 30 s idle), then [\".gpu\"] with 'bench/spark-device.sh run --size-mb ...'"
}

cmd_receive() {
    local d got=0
    mkdir -p "$STORE"
    for d in "$CARRY"/part-*; do
        [ -f "$d/MANIFEST" ] || continue
        (cd "$d" && sha256sum --quiet -c MANIFEST) || { say "$d: checksums do not match"; exit 1; }
        mkdir -p "$STORE/$(basename "$d")"
        cp "$d"/* "$STORE/$(basename "$d")/"
        got=$((got + 1))
        say "received $(basename "$d") ($(du -sh "$d" | cut -f1)) into $STORE"
    done
    [ "$got" -gt 0 ] || { say "no .spark/part-N carried"; exit 2; }
    ls "$STORE" >&2
}

cmd_run() {
    local parts= p f
    for f in "$STORE"/part-*/PARTS; do
        [ -f "$f" ] && parts=$(cat "$f") && break
    done
    [ -n "$parts" ] || { say "nothing received in $STORE: carry the parts first (bench/spark-device.sh receive)"; exit 2; }
    for ((p = 1; p <= parts; p++)); do
        [ -f "$STORE/part-$p/MANIFEST" ] || { say "part $p of $parts was never received"; exit 2; }
    done
    if [ ! -f "$STORE/unpacked" ]; then
        rm -rf "$STORE/jre" "$STORE/prebuilt" && mkdir -p "$STORE/prebuilt"
        for p in "$STORE"/part-*; do
            for f in "$p"/*.tar "$p"/*.tar.xz; do
                [ -e "$f" ] || continue
                case "$f" in
                    */jre.tar.xz) tar -C "$STORE" -xJf "$f" ;;
                    *) tar -C "$STORE/prebuilt" -xf "$f" ;;
                esac
            done
        done
        touch "$STORE/unpacked"
    fi
    say "Spark's class path: $(ls "$STORE/prebuilt/jars" | wc -l) jars; Java: $("$STORE/jre/bin/java" -version 2>&1 | head -1)"
    SPARK_JAVA_HOME="$STORE/jre" exec "$ROOT/bin/gpu-run" shell "$ROOT/bench/spark-shuffle.sh" --prebuilt "$STORE/prebuilt" "$@"
}

case "${1:-}" in
    pack) cmd_pack ;;
    receive) cmd_receive ;;
    run) shift && cmd_run "$@" ;;
    *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
