package org.ucx4j.cli;

import java.util.Locale;

/** What {@code ucx4j bench} measures, in {@code ucx_perftest}'s terms. */
enum BenchMode {
    /**
     * Ping-pong: one operation at a time, each a round trip (a message and its echo; a put and a flush;
     * a get). One-way latency is half a round trip.
     */
    LATENCY,
    /**
     * Many operations in flight ({@code --window}) of {@code --size} bytes, then a completion
     * (acknowledgement, flush or the last get): payload MB/s, MB = 2^20 bytes.
     */
    BANDWIDTH,
    /** As bandwidth, with small messages (8 bytes by default) and a wider window: messages per second. */
    RATE;

    /** Lower-case name for output. */
    String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
