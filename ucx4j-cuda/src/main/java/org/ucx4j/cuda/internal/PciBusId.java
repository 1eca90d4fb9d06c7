package org.ucx4j.cuda.internal;

import java.util.Locale;

/**
 * PCI bus ids in one spelling. CUDA prints {@code 0000:18:00.0}, NVML {@code 00000000:18:00.0}; both
 * become {@code 0000:18:00.0} (domain of four hex digits, lower case).
 */
public final class PciBusId {
    private PciBusId() {}

    /**
     * The one spelling of a bus id.
     *
     * @param busId as CUDA or NVML prints it
     * @return {@code dddd:bb:dd.f}, lower case; the input unchanged when it is not a bus id
     */
    public static String normalize(String busId) {
        String s = busId.trim().toLowerCase(Locale.ROOT);
        int colon = s.indexOf(':');
        if (colon < 0 || s.indexOf(':', colon + 1) < 0) {
            return s;
        }
        String domain = s.substring(0, colon);
        try {
            long d = Long.parseLong(domain, 16);
            return String.format(Locale.ROOT, "%04x", d) + s.substring(colon);
        } catch (NumberFormatException e) {
            return s;
        }
    }
}
