package org.ucx4j;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads UCX's description of an endpoint ({@code ucp_ep_print_info}, {@link UcxEndpoint#describe()}): which
 * transports carry a tag message of a given size from host memory. Two layouts, both parsed:
 *
 * <ul>
 *   <li>UCX 1.13 (protocols v1): the lanes ({@code lane[0]:  3:sysv/memory.0 md[2] -> ... am am_bw#0}) and the
 *       size thresholds of {@code tag_send} ({@code 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)}):
 *       eager protocols go over the lanes used for active messages (or tag offload), rendezvous over the
 *       {@code rma_bw} lanes (the {@code am_bw} lanes when there are none);
 *   <li>UCX 1.16 and later (protocols v2): the table "tagged message by ucp_tag_send* from host memory", one
 *       row per size range naming its protocol and the transport/device it uses ({@code sysv/memory}); a
 *       rendezvous row marked {@code (?)} is UCX's own estimate, as the remote side may choose differently.
 * </ul>
 *
 * <p>Threading: stateless.
 */
final class EndpointDescription {
    private static final Pattern LANE =
            Pattern.compile("lane\\[(\\d+)\\]:\\s+\\d+:([A-Za-z0-9_]+)/\\S+.*?->\\s*\\S+(.*)$");
    private static final Pattern V1_TAG_SEND = Pattern.compile("^#?\\s*tag_send:\\s*(\\S+)\\s*$");
    private static final Pattern V2_ROW =
            Pattern.compile("^#?\\s*\\|\\s*([0-9A-Za-z.]+)\\s*\\|([^|]*)\\|([^|]*)\\|\\s*$");
    private static final Pattern TRANSPORT = Pattern.compile("([A-Za-z0-9_]+)/");
    private static final String V2_TAG_TABLE = "tagged message by ucp_tag_send* from host memory";

    private EndpointDescription() {}

    /**
     * The transports that carry a tag message of {@code size} bytes from host memory.
     *
     * @param text UCX's description of the endpoint
     * @param size the message size in bytes
     * @return transport names in UCX's order, without duplicates; empty when the description does not say
     */
    static List<String> tagTransports(String text, long size) {
        List<String> v2 = fromProtocolTable(text, size);
        return v2 != null ? v2 : fromLanes(text, size);
    }

    /** Protocols v2: the row of the tag table whose range holds {@code size}; null when there is no table. */
    private static List<String> fromProtocolTable(String text, long size) {
        String[] lines = text.split("\n");
        int i = 0;
        while (i < lines.length && !lines[i].contains(V2_TAG_TABLE)) {
            i++;
        }
        if (i == lines.length) {
            return null;
        }
        for (i++; i < lines.length; i++) {
            String line = lines[i];
            if (line.contains(" by ucp_")) {
                break; // the next table
            }
            Matcher m = V2_ROW.matcher(line.strip());
            if (!m.matches() || !inRange(m.group(1), size)) {
                continue;
            }
            List<String> out = new ArrayList<>();
            Matcher t = TRANSPORT.matcher(m.group(3));
            while (t.find()) {
                if (!out.contains(t.group(1))) {
                    out.add(t.group(1));
                }
            }
            return out;
        }
        return List.of();
    }

    /** A v2 range cell ({@code 0}, {@code 93..5028}, {@code 256K..inf}) holds {@code size}. */
    private static boolean inRange(String range, long size) {
        int dots = range.indexOf("..");
        try {
            if (dots < 0) {
                return size == bound(range);
            }
            String hi = range.substring(dots + 2);
            return size >= bound(range.substring(0, dots)) && (hi.equals("inf") || size <= bound(hi));
        } catch (NumberFormatException e) {
            return false; // the header row ("Range") or a layout this parser does not know
        }
    }

    private static long bound(String s) {
        String t = s.toUpperCase(Locale.ROOT);
        long unit = 1;
        char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
        switch (last) {
            case 'K' -> unit = 1L << 10;
            case 'M' -> unit = 1L << 20;
            case 'G' -> unit = 1L << 30;
            default -> {}
        }
        return Long.parseLong(unit == 1 ? t : t.substring(0, t.length() - 1)) * unit;
    }

    /** Protocols v1: the lanes and the tag_send thresholds. */
    private static List<String> fromLanes(String text, long size) {
        List<String[]> lanes = new ArrayList<>(); // transport, usage words
        String protocol = null;
        for (String line : text.split("\n")) {
            Matcher lane = LANE.matcher(line);
            if (lane.find()) {
                lanes.add(new String[] {lane.group(2), " " + lane.group(3).strip() + " "});
                continue;
            }
            Matcher tag = V1_TAG_SEND.matcher(line.strip());
            if (tag.matches()) {
                protocol = v1Protocol(tag.group(1), size);
            }
        }
        if (protocol == null || lanes.isEmpty()) {
            return List.of();
        }
        List<String> usages = protocol.startsWith("rndv")
                ? List.of(" rma_bw#", " am_bw#")
                : protocol.contains("offload") ? List.of(" tag ", " am ") : List.of(" am ");
        for (String usage : usages) {
            List<String> out = new ArrayList<>();
            for (String[] l : lanes) {
                if (l[1].contains(usage) && !out.contains(l[0])) {
                    out.add(l[0]);
                }
            }
            if (!out.isEmpty()) {
                return out;
            }
        }
        return List.of();
    }

    /**
     * The protocol a v1 threshold list ({@code 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)}) picks for
     * {@code size}, or null when it cannot be read.
     */
    private static String v1Protocol(String thresholds, long size) {
        String[] parts = thresholds.split("\\.\\.");
        // Alternating: bound, <protocol>, bound, <protocol>, ..., (inf)
        String chosen = null;
        for (int i = 0; i + 2 < parts.length; i += 2) {
            String proto = parts[i + 1];
            if (!proto.startsWith("<") || !proto.endsWith(">")) {
                return null;
            }
            try {
                long from = Long.parseLong(parts[i]);
                String next = parts[i + 2];
                long to = next.equals("(inf)") ? Long.MAX_VALUE : Long.parseLong(next);
                if (size >= from && size < to) {
                    chosen = proto.substring(1, proto.length() - 1);
                }
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return chosen;
    }
}
