package org.ucx4j.cli;

/** What {@code ucx4j pingpong} measures. */
enum PingPongMode {
    /** Round trips of one message each way; one-way latency is half a round trip. */
    LATENCY("tag_lat"),
    /** A stream of messages one way, a window in flight, then a one-byte acknowledgement. */
    BANDWIDTH("tag_bw");

    private final String perftestName;

    PingPongMode(String perftestName) {
        this.perftestName = perftestName;
    }

    /** The {@code ucx_perftest -t} test this mode corresponds to. */
    String perftestName() {
        return perftestName;
    }

    /** Lower-case name for output. */
    String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
