package org.ucx4j.cli;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The outcome of one {@code ucx4j bench --comm} run. Latency is one-way (half a round trip) in
 * microseconds, round trips per second are one over the mean round trip; bandwidth is payload bytes
 * (frames times size) per second in MB/s, MB = 2^20 bytes.
 *
 * @param kind the transport
 * @param settings what was run
 * @param seconds wall time of the measured part (latency: the sum of the round trips)
 * @param latency round-trip statistics, or null in bandwidth mode
 */
record CommBenchResult(CommKind kind, CommBenchSettings settings, double seconds, LatencyStats latency) {
    private static final double MIB = 1024.0 * 1024.0;

    /** Round trips per second (latency mode), else NaN. */
    double roundTripsPerSecond() {
        return latency == null ? Double.NaN : settings.iterations() / seconds;
    }

    /** Payload MB/s, MB = 2^20 bytes (bandwidth mode), else NaN. */
    double bandwidthMiBps() {
        return latency != null ? Double.NaN : settings.iterations() * (double) settings.messageBytes() / seconds / MIB;
    }

    /** The fields {@code --json} prints (bench/vs-distributed-ucxx.sh reads them: keep the names). */
    Map<String, Object> toMap() {
        boolean lat = latency != null;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("comm", kind.scheme());
        m.put("mode", settings.mode().label());
        m.put("frames", settings.frames());
        m.put("size", settings.size());
        m.put("iterations", settings.iterations());
        m.put("warmup", settings.warmup());
        m.put("window", lat ? null : settings.window());
        m.put("round_trips_per_s", lat ? round(roundTripsPerSecond(), 1) : null);
        m.put("latency_us_p50", lat ? round(latency.oneWayMicros(50), 3) : null);
        m.put("latency_us_p99", lat ? round(latency.oneWayMicros(99), 3) : null);
        m.put("latency_us_avg", lat ? round(latency.meanOneWayMicros(), 3) : null);
        m.put("bandwidth_mbps", lat ? null : round(bandwidthMiBps(), 2));
        m.put("seconds", round(seconds, 3));
        return m;
    }

    /** Prints a small table and the units. */
    void printTable(PrintStream out) {
        boolean lat = latency != null;
        String format = "| %-6s | %-9s | %6s | %12s | %10s | %13s | %10s | %10s | %12s |%n";
        String rule =
                "+--------+-----------+--------+--------------+------------+---------------+------------+------------+--------------+";
        out.println("ucx4j bench --comm " + kind.scheme());
        out.println(rule);
        out.printf(
                format,
                "comm",
                "mode",
                "frames",
                "size (B)",
                "iterations",
                "round trips/s",
                "lat p50",
                "lat p99",
                "MB/s");
        out.println(rule);
        out.printf(
                format,
                kind.scheme(),
                settings.mode().label(),
                settings.frames(),
                settings.size(),
                settings.iterations(),
                lat ? fmt(roundTripsPerSecond(), 1) : "-",
                lat ? fmt(latency.oneWayMicros(50), 3) : "-",
                lat ? fmt(latency.oneWayMicros(99), 3) : "-",
                lat ? "-" : fmt(bandwidthMiBps(), 2));
        out.println(rule);
        out.println(
                "latency: one-way (half a round trip of a message and its echo), usec; MB/s: payload (frames x size) in"
                        + " 2^20 bytes per second; " + settings.warmup() + " warm-up "
                        + (lat ? "round trips" : "messages")
                        + " not counted; " + fmt(seconds, 3) + " s measured"
                        + (lat ? "" : "; window " + settings.window()));
    }

    static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    private static double round(double v, int decimals) {
        double f = Math.pow(10, decimals);
        return Math.round(v * f) / f;
    }
}
