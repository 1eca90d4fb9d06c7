package org.ucx4j.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ucx4j.ConfigEntry;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;

/**
 * Everything {@code ucx4j info} reports, gathered once into a JSON-shaped tree. Each part is gathered
 * on its own, so that a missing UCX or a bad configuration still leaves the rest to report.
 *
 * <p>Top-level keys: {@code ucx} (available, version, library, origin, attempts, environment, error),
 * {@code java}, {@code transports}, {@code resources}, {@code ucx_config} (the effective
 * {@code UCX_*} settings of a context made with the configuration's context options), {@code config}
 * ({@link UcxConfig#toMap()}, or {@code error}). With an invalid configuration no context is made
 * (it would load the same configuration): {@code transports}, {@code resources} and {@code ucx_config}
 * stay empty, and {@code ucx.available} still says whether the library loaded.
 *
 * @param tree the report
 * @param config the loaded configuration, or null when it did not load
 * @param configEntries the configuration's keys, values and sources (empty when it did not load)
 * @param problems what went wrong, one line each (empty when nothing did)
 */
record InfoReport(Map<String, Object> tree, UcxConfig config, List<ConfigEntry> configEntries, List<String> problems) {

    /** Whether UCX loaded and a context could be created. */
    boolean ucxAvailable() {
        return Boolean.TRUE.equals(section("ucx").get("available"));
    }

    @SuppressWarnings("unchecked")
    Map<String, Object> section(String name) {
        Object v = tree.get(name);
        return v instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    /**
     * Gathers the report. Loads the configuration first (it does not touch UCX), then UCX.
     *
     * @return the report
     */
    static InfoReport collect() {
        Map<String, Object> tree = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();

        UcxConfig config = null;
        String configError = null;
        try {
            config = UcxConfig.load();
        } catch (RuntimeException e) {
            configError = e.getMessage();
            problems.add("ucx4j configuration: " + e.getMessage());
        }

        Map<String, Object> ucx = new LinkedHashMap<>();
        tree.put("ucx", ucx);
        tree.put("java", javaSection());
        tree.put("transports", List.of());
        tree.put("resources", List.of());
        tree.put("ucx_config", Map.of());

        boolean available;
        try {
            available = config == null ? Ucx.isAvailable() : Ucx.configure(config);
        } catch (IllegalStateException e) {
            problems.add(e.getMessage());
            available = Ucx.isAvailable();
        }
        ucx.put("available", available);
        if (available) {
            ucx.put("version", Ucx.version());
            ucx.put("library", Ucx.libraryPath());
            ucx.put("origin", Ucx.libraryOrigin());
        } else {
            ucx.put("version", null);
            ucx.put("library", null);
            ucx.put("origin", null);
        }
        ucx.put("attempts", available ? Ucx.loadAttempts() : failedAttempts(Ucx.loadAttempts()));
        ucx.put("environment", new LinkedHashMap<>(Ucx.presetEnvironment()));
        if (!available) {
            Throwable cause = Ucx.unavailabilityCause();
            String message = cause == null ? "UCX is not available" : cause.getMessage();
            ucx.put("error", message);
            problems.add(message);
        } else if (config == null) {
            // A context would load the same configuration and fail the same way: that is not "UCX unavailable".
            problems.add("no UCX context created (transports, devices, UCX's settings): the ucx4j configuration is "
                    + "invalid");
        } else {
            Map<String, String> contextOptions = config.ucxSettings().contextOptions();
            try (UcxContext context =
                    UcxContext.builder().name("ucx4j-info").config(config).build()) {
                tree.put("transports", context.transports());
                tree.put("resources", context.resources());
                tree.put("ucx_config", UcxConfigText.parse(context.describeConfig()));
            } catch (RuntimeException | Error e) {
                ucx.put("available", false);
                ucx.put("error", "cannot create a UCX context: " + e.getMessage());
                problems.add("cannot create a UCX context with options " + contextOptions + ": " + e.getMessage());
            }
        }

        tree.put("gpu", GpuSection.collect((List<?>) tree.get("transports")));
        if (config != null) {
            tree.put("config", config.toMap());
        } else {
            Map<String, Object> error = new LinkedHashMap<>();
            error.put("error", configError);
            tree.put("config", error);
        }
        return new InfoReport(tree, config, config == null ? List.of() : config.entries(), List.copyOf(problems));
    }

    /**
     * When UCX did not load, {@link Ucx#loadAttempts()} gives the whole error message line by line; the
     * attempts are its {@code - candidate (origin): outcome} lines.
     */
    private static List<String> failedAttempts(List<String> lines) {
        return lines.stream()
                .map(String::trim)
                .filter(l -> l.startsWith("- "))
                .map(l -> l.substring(2))
                .toList();
    }

    private static Map<String, Object> javaSection() {
        Map<String, Object> java = new LinkedHashMap<>();
        java.put("version", Runtime.version().toString());
        java.put("vendor", System.getProperty("java.vendor"));
        java.put("home", System.getProperty("java.home"));
        java.put("vm", System.getProperty("java.vm.name"));
        java.put(
                "os",
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"));
        java.put("native_access", nativeAccess());
        return java;
    }

    /** Whether the core module may call native code without warnings ({@code --enable-native-access}). */
    private static boolean nativeAccess() {
        Module core = Ucx.class.getModule();
        return core.isNativeAccessEnabled();
    }
}
