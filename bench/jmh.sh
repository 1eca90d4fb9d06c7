#!/usr/bin/env bash
# JMH microbenchmarks of ucx4j's Java-side overhead (ucx4j-jmh). Builds (package: the jars stay in the
# tree, nothing is installed into ~/.m2), then runs JMH on the class path; arguments go to JMH (e.g.
# -prof gc for allocations per operation, -f 1 -wi 2 -i 3 for a short run).
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
# shellcheck source=bin/find-jdk
source "$ROOT/bin/find-jdk"
ucx4j_find_jdk javac
cd "$ROOT"
JAVA_HOME="$UCX4J_JAVA_HOME" MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow ${MAVEN_OPTS:-}" \
    ./mvnw -q -B -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true package -pl ucx4j-jmh -am >&2
cp=$(ls ucx4j-jmh/target/ucx4j-jmh-*.jar | head -n 1):$(ls ucx4j-jmh/target/lib/*.jar | tr '\n' ':')
exec "$UCX4J_JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$cp" org.openjdk.jmh.Main "$@"
