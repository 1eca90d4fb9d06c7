package org.ucx4j.cli;

import java.util.LinkedHashMap;
import java.util.Map;

/** Parses UCX's configuration dump ({@code ucp_config_print}: {@code UCX_NAME=value} lines, {@code #} comments). */
final class UcxConfigText {
    private UcxConfigText() {}

    /**
     * Parses the dump.
     *
     * @param text the dump
     * @return {@code UCX_NAME} to value, in the order printed; comment and blank lines skipped
     */
    static Map<String, String> parse(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            String l = line.trim();
            int eq = l.indexOf('=');
            if (l.isEmpty() || l.startsWith("#") || eq <= 0) {
                continue;
            }
            out.put(l.substring(0, eq).trim(), l.substring(eq + 1).trim());
        }
        return out;
    }
}
