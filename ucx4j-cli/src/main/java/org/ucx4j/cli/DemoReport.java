package org.ucx4j.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxKeys;

/**
 * The results of {@code ucx4j demo}: the terminal table, the JSON, and a self-contained HTML page (inline
 * SVG charts, no script, nothing fetched) with the machine's facts.
 *
 * @param machine the facts about this machine and software ({@link #machineFacts})
 * @param sizes the frame sizes run, ascending
 * @param results every run's result, both transports, both modes
 * @param ucxCarriers per frame size, the UCX transports that carried {@code ucx://}'s messages of that size
 *     ({@link org.ucx4j.comm.Comm#carriedBy}); a size missing or empty: UCX did not say
 */
record DemoReport(
        Map<String, Object> machine,
        List<Long> sizes,
        List<CommBenchResult> results,
        Map<Long, List<String>> ucxCarriers) {
    /** What the transports column says where UCX does not say. */
    static final String NOT_SAID = "UCX does not say";

    /** The transports compared, in column order. */
    static final List<CommKind> KINDS = List.of(CommKind.UCX, CommKind.TCP);

    private static final String UCX_COLOR = "#1f77b4";
    private static final String TCP_COLOR = "#ff7f0e";

    /** The result of one run, or null when it is missing. */
    CommBenchResult find(CommKind kind, BenchMode mode, long size) {
        for (CommBenchResult r : results) {
            if (r.kind() == kind && r.settings().mode() == mode && r.settings().size() == size) {
                return r;
            }
        }
        return null;
    }

    /** MB/s of a transport at a size, NaN when not run. */
    double bandwidth(CommKind kind, long size) {
        CommBenchResult r = find(kind, BenchMode.BANDWIDTH, size);
        return r == null ? Double.NaN : r.bandwidthMiBps();
    }

    /** Round trips per second of a transport at a size, NaN when not run. */
    double roundTrips(CommKind kind, long size) {
        CommBenchResult r = find(kind, BenchMode.LATENCY, size);
        return r == null ? Double.NaN : r.roundTripsPerSecond();
    }

    /** Median one-way latency in usec of a transport at a size, NaN when not run. */
    double latencyP50(CommKind kind, long size) {
        CommBenchResult r = find(kind, BenchMode.LATENCY, size);
        return r == null ? Double.NaN : r.latency().oneWayMicros(50);
    }

    /** The transports column of a size: UCX's transport names, or {@link #NOT_SAID}. */
    String carriers(long size) {
        List<String> names = ucxCarriers.getOrDefault(size, List.of());
        return names.isEmpty() ? NOT_SAID : String.join(", ", names);
    }

    // ------------------------------------------------------------------ terminal

    /** Prints the table, the units and where the page is. */
    void printTable(PrintStream out, Path html) {
        out.println("ucx4j demo: ucx:// against tcp:// over loopback, client and server in two JVMs");
        out.println(facts("; "));
        String format = "| %10s | %10s | %10s | %7s | %13s | %13s | %7s | %-16s |%n";
        String rule = "+------------+------------+------------+---------+---------------+---------------+---------+"
                + "------------------+";
        out.println(rule);
        out.printf(
                format,
                "frame size",
                "ucx MB/s",
                "tcp MB/s",
                "ucx/tcp",
                "ucx round-t/s",
                "tcp round-t/s",
                "ucx/tcp",
                "ucx:// via (UCX)");
        out.println(rule);
        for (long size : sizes) {
            double ub = bandwidth(CommKind.UCX, size);
            double tb = bandwidth(CommKind.TCP, size);
            double ur = roundTrips(CommKind.UCX, size);
            double tr = roundTrips(CommKind.TCP, size);
            out.printf(
                    format,
                    sizeLabel(size),
                    fixed(ub),
                    fixed(tb),
                    ratio(ub, tb),
                    fixed(ur),
                    fixed(tr),
                    ratio(ur, tr),
                    carriers(size));
        }
        out.println(rule);
        out.println("MB/s: payload MiB per second, one frame per message, " + DemoPlan.WINDOW + " writes in flight; "
                + "round-t/s: round trips per second of one message and its echo; ucx/tcp > 1: ucx:// is faster");
        out.println("ucx:// via: the UCX transports that carry a tag message of the frame's size on the client's "
                + "endpoint (UCX's ucp_ep_print_info; tcp:// is a kernel socket)");
        if (html != null) {
            out.println("chart: " + html.toAbsolutePath());
        }
    }

    private String facts(String separator) {
        List<String> parts = new ArrayList<>();
        parts.add("UCX " + machine.get("ucx_version"));
        if (machine.get("ucx_transports") != null) {
            parts.add("UCX transports " + machine.get("ucx_transports"));
        }
        parts.add("peer-error-handling " + machine.get("peer_error_handling"));
        parts.add("Java " + machine.get("java"));
        parts.add(
                machine.get("cores") + " cores" + (machine.get("cpu") == null ? "" : " (" + machine.get("cpu") + ")"));
        parts.add(String.valueOf(machine.get("date")));
        return String.join(separator, parts);
    }

    private static String fixed(double v) {
        if (Double.isNaN(v)) {
            return "-";
        }
        return v >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) || b == 0 ? "-" : String.format(Locale.ROOT, "%.2fx", a / b);
    }

    // ------------------------------------------------------------------ JSON

    /** What {@code demo --json} prints. */
    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("machine", machine);
        m.put("sizes", sizes);
        m.put("results", results.stream().map(CommBenchResult::toMap).toList());
        Map<String, Object> carried = new LinkedHashMap<>();
        for (long size : sizes) {
            carried.put(String.valueOf(size), ucxCarriers.getOrDefault(size, List.of()));
        }
        m.put("ucx_transports_by_frame_size", carried);
        return m;
    }

    // ------------------------------------------------------------------ HTML

    /** Writes the page. */
    void writeHtml(Path path) throws IOException {
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        Files.writeString(path, html());
    }

    /** The page: facts, both charts, the table, the method. */
    String html() {
        StringBuilder h = new StringBuilder();
        h.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
                .append("<title>ucx4j demo: ucx:// vs tcp://</title>\n<style>\n")
                .append("body{font-family:sans-serif;max-width:820px;margin:2em auto;color:#222}\n")
                .append("table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px}\n")
                .append("td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}\n")
                .append("figure{margin:1.5em 0}code{background:#f4f4f4;padding:0 3px}\n</style>\n</head>\n<body>\n");
        h.append("<h1>ucx4j demo: <code>ucx://</code> vs <code>tcp://</code></h1>\n");
        h.append("<p>The same workload over two ucx4j-comm transports on loopback, client and server in two JVMs: ")
                .append("one frame of native memory per message, from 1 KiB up. Bandwidth streams messages with ")
                .append(DemoPlan.WINDOW)
                .append(" writes in flight until the server has read them all; ")
                .append("latency echoes one message back and forth.</p>\n");
        h.append("<h2>Machine</h2>\n<table>\n");
        machine.forEach((k, v) -> h.append("<tr><th>")
                .append(SvgChart.esc(k.replace('_', ' ')))
                .append("</th><td>")
                .append(SvgChart.esc(String.valueOf(v)))
                .append("</td></tr>\n"));
        h.append("</table>\n");
        h.append("<figure>\n")
                .append(chart("Bandwidth by frame size", "MB/s (MB = 2^20 bytes)", false, this::bandwidth))
                .append("</figure>\n");
        h.append("<figure>\n")
                .append(chart("Round trips per second by frame size", "round trips/s", true, this::roundTrips))
                .append("</figure>\n");
        h.append("<h2>Results</h2>\n<table>\n<tr><th>frame size</th><th>ucx MB/s</th><th>tcp MB/s</th><th>ucx/tcp</th>")
                .append("<th>ucx round trips/s</th><th>tcp round trips/s</th><th>ucx/tcp</th>")
                .append("<th>ucx latency p50 (us)</th><th>tcp latency p50 (us)</th><th>ucx:// via (UCX)</th></tr>\n");
        for (long size : sizes) {
            double ub = bandwidth(CommKind.UCX, size);
            double tb = bandwidth(CommKind.TCP, size);
            double ur = roundTrips(CommKind.UCX, size);
            double tr = roundTrips(CommKind.TCP, size);
            h.append("<tr><td>").append(sizeLabel(size)).append("</td>");
            for (String cell : List.of(
                    fixed(ub),
                    fixed(tb),
                    ratio(ub, tb),
                    fixed(ur),
                    fixed(tr),
                    ratio(ur, tr),
                    fixed(latencyP50(CommKind.UCX, size)),
                    fixed(latencyP50(CommKind.TCP, size)))) {
                h.append("<td class=\"n\">").append(cell).append("</td>");
            }
            h.append("<td>").append(SvgChart.esc(carriers(size))).append("</td>");
            h.append("</tr>\n");
        }
        h.append("</table>\n");
        h.append("<h2>Method</h2>\n<ul>\n")
                .append(
                        "<li>Bandwidth: payload bytes of the measured messages over the time from the first write to the ")
                .append(
                        "server's reply that it read the last one (MB = 2<sup>20</sup> bytes); warm-up messages first, ")
                .append("not counted.</li>\n")
                .append(
                        "<li>Round trips/s: one over the mean round trip of a message written and its echo read; latency ")
                .append("p50 is half the median round trip.</li>\n")
                .append("<li>Received messages are allocated, and freed when closed, by the comm (as an application ")
                .append("gets them); the server checks the bytes of the first and last message of each phase, outside ")
                .append("the timing.</li>\n")
                .append(
                        "<li><code>ucx://</code> runs with the ucx4j configuration in force (see the machine table). With ")
                .append("<code>peer-error-handling</code> true, the default, UCX leaves out transports that cannot ")
                .append(
                        "detect a dead peer, shared memory among them; <code>UCX4J__PEER_ERROR_HANDLING=false bin/ucx4j ")
                .append("demo</code> lets it use them (docs/CONFIGURATION.md).</li>\n")
                .append("<li>ucx:// via: the UCX transports that carry a tag message of the frame's size on the ")
                .append("client's endpoint, as UCX describes the endpoint (<code>ucp_ep_print_info</code>): for ")
                .append("rendezvous sizes UCX 1.16 and later give their own estimate, as the receiver takes part in ")
                .append("the choice.</li>\n")
                .append("<li>Reproduce: <code>bin/ucx4j demo</code>; one point: <code>bin/ucx4j bench --comm ucx ")
                .append(
                        "--mode bandwidth --size 64Mi</code>, <code>bin/ucx4j bench --comm tcp --size 4Ki --json</code>.</li>\n")
                .append("</ul>\n</body>\n</html>\n");
        return h.toString();
    }

    private String chart(
            String title, String yLabel, boolean logY, java.util.function.ToDoubleBiFunction<CommKind, Long> value) {
        List<SvgChart.Tick> ticks = new ArrayList<>();
        double[] xs = new double[sizes.size()];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = sizes.get(i);
            ticks.add(new SvgChart.Tick(xs[i], sizeLabel(sizes.get(i))));
        }
        List<SvgChart.Series> series = new ArrayList<>();
        for (CommKind kind : KINDS) {
            double[] ys = new double[xs.length];
            for (int i = 0; i < ys.length; i++) {
                ys[i] = value.applyAsDouble(kind, sizes.get(i));
            }
            series.add(
                    new SvgChart.Series(kind.scheme() + "://", kind == CommKind.UCX ? UCX_COLOR : TCP_COLOR, xs, ys));
        }
        return new SvgChart(title, "frame size (log scale)", yLabel, logY, ticks, series).render();
    }

    // ------------------------------------------------------------------ facts

    /**
     * What the page says about the machine and the software; each fact is gathered on its own, and one that
     * cannot be had is left out.
     *
     * @param config the configuration the comms use
     * @return the facts, in display order
     */
    static Map<String, Object> machineFacts(UcxConfig config) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("date", ZonedDateTime.now().withNano(0).format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
        String cpu = procLine("/proc/cpuinfo", "model name");
        if (cpu != null) {
            m.put("cpu", cpu);
        }
        m.put("cores", Runtime.getRuntime().availableProcessors());
        String mem = procLine("/proc/meminfo", "MemTotal");
        if (mem != null && mem.endsWith(" kB")) {
            try {
                long kb = Long.parseLong(mem.substring(0, mem.length() - 3).trim());
                m.put("memory", String.format(Locale.ROOT, "%.1f GiB", kb / 1024.0 / 1024.0));
            } catch (NumberFormatException ignored) {
                // left out
            }
        }
        m.put(
                "os",
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"));
        m.put("java", Runtime.version() + " (" + System.getProperty("java.vendor") + ")");
        m.put("ucx_version", Ucx.isAvailable() ? Ucx.version() : "unavailable");
        if (Ucx.isAvailable()) {
            try (UcxContext context =
                    UcxContext.builder().config(config).name("ucx4j-demo").build()) {
                m.put("ucx_transports", String.join(", ", context.transports()));
            } catch (RuntimeException e) {
                // left out: the demo's own runs will say what is wrong
            }
        }
        if (System.getenv("UCX_TLS") != null) {
            m.put("ucx_tls", System.getenv("UCX_TLS"));
        }
        m.put("peer_error_handling", config.get(UcxKeys.PEER_ERROR_HANDLING));
        m.put("progress_mode", config.get(UcxKeys.PROGRESS_MODE).configName());
        return m;
    }

    private static String procLine(String file, String key) {
        try {
            for (String line : Files.readAllLines(Path.of(file))) {
                int colon = line.indexOf(':');
                if (colon > 0 && line.substring(0, colon).trim().equals(key)) {
                    return line.substring(colon + 1).trim();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or not readable
        }
        return null;
    }

    /** A size as people write it: 1 KiB, 64 MiB, 100 B. */
    static String sizeLabel(long bytes) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        long v = bytes;
        while (u < units.length - 1 && v >= 1024 && v % 1024 == 0) {
            v /= 1024;
            u++;
        }
        return v + " " + units[u];
    }
}
