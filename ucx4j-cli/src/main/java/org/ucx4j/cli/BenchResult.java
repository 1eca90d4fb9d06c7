package org.ucx4j.cli;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.ucx4j.ProgressMode;

/**
 * The outcome of one benchmark run, in ucx_perftest's conventions: latency is one-way (half a round
 * trip) in microseconds; bandwidth is payload bytes per second in "MB/s" where MB = 2^20 bytes; in
 * latency mode the message rate is one over the one-way latency, as ucx_perftest computes it; in
 * bandwidth and rate modes it is operations per second of the measured phase.
 *
 * @param settings what was run
 * @param progress the progress mode of the client (the spawned server uses the same)
 * @param seconds wall time of the measured part
 * @param latency round-trip statistics, or null in bandwidth and rate modes
 * @param ucxVersion the UCX version
 * @param transports the transports the client's context uses
 */
record BenchResult(
        BenchSettings settings,
        ProgressMode progress,
        double seconds,
        LatencyStats latency,
        String ucxVersion,
        List<String> transports) {
    private static final double MIB = 1024.0 * 1024.0;

    /** Messages per second (latency mode: one-way messages, 2 per round trip). */
    double messageRate() {
        if (latency != null) {
            return 1e6 / latency.meanOneWayMicros();
        }
        return settings.iterations() / seconds;
    }

    /** Payload MB/s, MB = 2^20 bytes. */
    double bandwidthMiBps() {
        return messageRate() * settings.size() / MIB;
    }

    /** The fields {@code --json} prints. */
    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("op", settings.op().label());
        m.put("mode", settings.mode().label());
        m.put("perftest", settings.perftestName());
        m.put("size", settings.size());
        m.put("iterations", settings.iterations());
        m.put("warmup", settings.warmup());
        m.put("window", settings.mode() == BenchMode.LATENCY ? null : settings.window());
        m.put("progress", progress.configName());
        // Whether UCX was told the buffers' memory kind (tag only; --detect-memory turns it off).
        m.put(
                "memory_declared",
                settings.op() == BenchOp.TAG && BenchMemory.current().declared() != null);
        m.put("latency_us_p50", latency == null ? null : round(latency.oneWayMicros(50), 3));
        m.put("latency_us_p99", latency == null ? null : round(latency.oneWayMicros(99), 3));
        m.put("latency_us_avg", latency == null ? null : round(latency.meanOneWayMicros(), 3));
        m.put("bandwidth_mbps", round(bandwidthMiBps(), 2));
        m.put("msg_rate", Math.round(messageRate()));
        m.put("seconds", round(seconds, 3));
        m.put("ucx_version", ucxVersion);
        m.put("transports", transports);
        m.put("ucx_tls", System.getenv("UCX_TLS"));
        return m;
    }

    /** Prints a small table and the units. */
    void printTable(PrintStream out) {
        out.printf(
                "ucx4j bench: UCX %s, progress %s, transports %s%s%n",
                ucxVersion,
                progress.configName(),
                String.join(",", transports),
                System.getenv("UCX_TLS") == null ? "" : " (UCX_TLS=" + System.getenv("UCX_TLS") + ")");
        String format = "| %-6s | %-9s | %12s | %10s | %10s | %10s | %10s | %12s | %12s |%n";
        String rule =
                "+--------+-----------+--------------+------------+------------+------------+------------+--------------+--------------+";
        out.println(rule);
        out.printf(format, "op", "mode", "size (B)", "iterations", "lat p50", "lat p99", "lat avg", "MB/s", "msg/s");
        out.println(rule);
        out.printf(
                format,
                settings.op().label(),
                settings.mode().label(),
                settings.size(),
                settings.iterations(),
                latency == null ? "-" : fmt(latency.oneWayMicros(50), 3),
                latency == null ? "-" : fmt(latency.oneWayMicros(99), 3),
                latency == null ? "-" : fmt(latency.meanOneWayMicros(), 3),
                fmt(bandwidthMiBps(), 2),
                String.valueOf(Math.round(messageRate())));
        out.println(rule);
        out.println("latency: one-way (half a round trip" + roundTripNote() + "), usec; MB/s: 2^20 bytes per second; "
                + settings.warmup() + " warm-up operations not counted; " + fmt(seconds, 3) + " s measured"
                + (settings.mode() == BenchMode.LATENCY ? "" : "; window " + settings.window())
                + "; compare with ucx_perftest -t " + settings.perftestName());
    }

    private String roundTripNote() {
        return switch (settings.op()) {
            case PUT -> ": a put and a flush";
            case GET -> ": a get";
            default -> "";
        };
    }

    private static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    private static double round(double v, int decimals) {
        double f = Math.pow(10, decimals);
        return Math.round(v * f) / f;
    }
}
