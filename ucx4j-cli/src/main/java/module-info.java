/**
 * The {@code ucx4j} command: {@code info} (what UCX and ucx4j see), {@code bench} (alias {@code pingpong}:
 * two-process latency, bandwidth and message rate of tag, stream, active-message, put and get
 * operations, or with {@code --comm} of whole messages over a ucx4j-comm transport) and {@code demo}
 * ({@code ucx://} against {@code tcp://} over loopback, as a table and an HTML chart), {@code launch} (one JVM per
 * GPU, or N CPU-only JVMs, that find each other) and {@code cuda config} (what each would get). Run with
 * {@code --enable-native-access=org.ucx4j.core}; {@code bin/ucx4j} does.
 */
module org.ucx4j.cli {
    requires org.ucx4j.core;
    requires org.ucx4j.comm;
    requires org.ucx4j.cuda;
    requires info.picocli;
    requires org.slf4j;
    // Resolves SnakeYAML, which the core only `requires static`, so that ucx4j.yaml is read.
    requires org.snakeyaml.engine.v2;

    // picocli fills @Option fields reflectively.
    opens org.ucx4j.cli to
            info.picocli;

    // The agent every launched worker loads (-javaagent): the JVM calls its premain reflectively.
    exports org.ucx4j.cli.watchdog;
}
