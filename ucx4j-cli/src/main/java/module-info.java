/**
 * The {@code ucx4j} command: {@code info} (what UCX and ucx4j see) and {@code pingpong} (a two-process
 * tag ping-pong for latency and bandwidth). Run with {@code --enable-native-access=org.ucx4j.core};
 * {@code bin/ucx4j} does.
 */
module org.ucx4j.cli {
    requires org.ucx4j.core;
    requires info.picocli;
    requires org.slf4j;

    // picocli fills @Option fields reflectively.
    opens org.ucx4j.cli to info.picocli;
}
