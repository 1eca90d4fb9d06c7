package org.ucx4j.cli;

import java.io.PrintStream;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.ucx4j.ConfigEntry;
import org.ucx4j.UcxConfig;

/** Renders an {@link InfoReport} as text for people. */
final class InfoText {
    private final PrintStream out;

    InfoText(PrintStream out) {
        this.out = out;
    }

    void print(InfoReport report) {
        Map<String, Object> ucx = report.section("ucx");
        out.println("UCX");
        if (Boolean.TRUE.equals(ucx.get("available"))) {
            field("version", ucx.get("version"));
            field("library", ucx.get("library"));
            field("found by", ucx.get("origin"));
        } else {
            field("status", "UNAVAILABLE");
        }
        list("attempts", (Collection<?>) ucx.get("attempts"));
        Map<?, ?> env = (Map<?, ?>) ucx.get("environment");
        if (env.isEmpty()) {
            field("environment", "(nothing set by ucx4j)");
        } else {
            env.forEach((k, v) -> field("environment", k + "=" + v + "   (set by ucx4j before loading UCX)"));
        }
        if (ucx.get("error") != null) {
            out.println();
            out.println(ucx.get("error"));
        }

        Map<String, Object> java = report.section("java");
        out.println();
        out.println("Java");
        field("version", java.get("version") + " (" + java.get("vendor") + ")");
        field("home", java.get("home"));
        field("os", java.get("os"));
        field(
                "native access",
                Boolean.TRUE.equals(java.get("native_access"))
                        ? "enabled for org.ucx4j.core"
                        : "NOT enabled: add --enable-native-access=org.ucx4j.core (or ALL-UNNAMED on the class path)");

        if (report.ucxAvailable()) {
            out.println();
            out.println("Transports  " + String.join(", ", strings(report.tree().get("transports"))));
            out.println("Resources   " + String.join(", ", strings(report.tree().get("resources"))));
        }

        GpuSection.print((java.util.Map<?, ?>) report.tree().get("gpu"), out);

        out.println();
        printConfig(report);

        Map<?, ?> ucxConfig = (Map<?, ?>) report.tree().get("ucx_config");
        if (!ucxConfig.isEmpty()) {
            out.println();
            out.println("UCX configuration (effective for a context made with the settings above)");
            ucxConfig.forEach((k, v) -> out.println("  " + k + "=" + v));
        }
    }

    private void printConfig(InfoReport report) {
        UcxConfig config = report.config();
        if (config == null) {
            out.println("ucx4j configuration: INVALID");
            out.println("  " + report.section("config").get("error"));
            return;
        }
        out.println("ucx4j configuration (file: "
                + config.configFile().map(Object::toString).orElse("none") + ")");
        int width = report.configEntries().stream()
                .mapToInt(e -> e.key().length())
                .max()
                .orElse(10);
        int valueWidth = report.configEntries().stream()
                .mapToInt(e -> e.value().length())
                .max()
                .orElse(10);
        for (ConfigEntry e : report.configEntries()) {
            out.printf("  %-" + width + "s  %-" + valueWidth + "s  [%s]%n", e.key(), e.value(), e.source());
        }
        UcxConfig.UcxSettings settings = config.ucxSettings();
        out.println("  maps to UCX context options: " + describe(settings.contextOptions()));
        out.println("  maps to UCX global options:  " + describe(settings.globalOptions())
                + (settings.globalOptions().isEmpty()
                        ? ""
                        : "   (set in the environment before UCX loads; UCX_* variables set outside win)"));
    }

    private static String describe(Map<String, String> options) {
        if (options.isEmpty()) {
            return "(none: UCX defaults)";
        }
        StringBuilder sb = new StringBuilder();
        options.forEach((k, v) ->
                sb.append(sb.isEmpty() ? "" : ", ").append(k).append('=').append(v));
        return sb.toString();
    }

    private void field(String name, Object value) {
        out.printf("  %-12s %s%n", name, value);
    }

    private void list(String name, Collection<?> values) {
        boolean first = true;
        for (Object v : values) {
            field(first ? name : "", v);
            first = false;
        }
    }

    private static List<String> strings(Object list) {
        return ((Collection<?>) list).stream().map(String::valueOf).toList();
    }
}
