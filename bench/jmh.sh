#!/usr/bin/env bash
# JMH microbenchmarks of ucx4j's Java-side overhead (ucx4j-jmh): the core's hot paths in one process.
# Builds (package: the jars stay in the tree, nothing is installed into ~/.m2), then runs JMH on the class
# path; arguments go to JMH (e.g. -prof gc for allocations per operation, -f 1 -wi 2 -i 3 for a short run).
#
#   bench/jmh.sh -prof gc                                    # the whole suite (about 15 minutes)
#   bench/jmh.sh 'TagHotPath|HandOff' -f 1 -wi 3 -i 5 -prof gc
#   bench/jmh.sh --pack .gpu/jmh                             # build, copy the jars there, run nothing
#   UCX4J_JMH_JARS=.gpu/jmh bench/jmh.sh -prof gc            # run packed jars: no JDK, no Maven needed
#
# On the GPU machine (no Maven): `bench/jmh.sh --pack .gpu/jmh` here, then bin/gpu-pack (it keeps
# .gpu/jmh), then `bin/gpu-run shell env UCX4J_JMH_JARS=.gpu/jmh bench/jmh.sh ...` there.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bin/find-jdk
source "$ROOT/bin/find-jdk"
cd "$ROOT"
build() {
    ucx4j_find_jdk javac
    JAVA_HOME="$UCX4J_JAVA_HOME" MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow ${MAVEN_OPTS:-}" \
        ./mvnw -q -B -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true package -pl ucx4j-jmh -am >&2
}
if [ "${1:-}" = "--pack" ]; then
    dest=${2:?--pack DIR}
    build
    rm -rf "$dest" && mkdir -p "$dest"
    cp ucx4j-jmh/target/ucx4j-jmh-*.jar ucx4j-jmh/target/lib/*.jar "$dest/"
    echo "bench/jmh.sh: packed $(find "$dest" -name '*.jar' | wc -l) jars into $dest ($(du -sh "$dest" | cut -f1))" >&2
    exit 0
fi
if [ -n "${UCX4J_JMH_JARS:-}" ]; then
    ucx4j_find_jdk
    cp=$(find "$UCX4J_JMH_JARS" -maxdepth 1 -name '*.jar' | sort | tr '\n' ':')
    [ -n "$cp" ] || { echo "bench/jmh.sh: no jars in UCX4J_JMH_JARS=$UCX4J_JMH_JARS" >&2; exit 2; }
else
    build
    cp=$(ls ucx4j-jmh/target/ucx4j-jmh-*.jar | head -n 1):$(ls ucx4j-jmh/target/lib/*.jar | tr '\n' ':')
fi
exec "$UCX4J_JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$cp" org.openjdk.jmh.Main "$@"
