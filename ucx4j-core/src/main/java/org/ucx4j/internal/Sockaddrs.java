package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;

/**
 * Builds and parses {@code struct sockaddr_in}/{@code sockaddr_in6} by hand ({@code <netinet/in.h>},
 * Linux). The family is in host byte order; the port and address are in network byte order.
 *
 * <p>Threading: stateless.
 */
public final class Sockaddrs {
    private static final short AF_INET = 2;
    private static final short AF_INET6 = 10;
    private static final ValueLayout.OfShort PORT = JAVA_SHORT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt SCOPE = ValueLayout.JAVA_INT;

    /** Bytes to reserve for any address: {@code sizeof(struct sockaddr_storage)}. */
    public static final int MAX_SIZE = 128;

    private Sockaddrs() {}

    /**
     * Writes {@code address} into {@code out} (at least {@link #MAX_SIZE} bytes, zeroed here).
     *
     * @return the length to pass as {@code socklen_t}
     */
    public static int write(InetSocketAddress address, MemorySegment out) {
        if (address.isUnresolved()) {
            throw new IllegalArgumentException("cannot resolve host '" + address.getHostString() + "'");
        }
        out.asSlice(0, MAX_SIZE).fill((byte) 0);
        InetAddress ip = address.getAddress();
        byte[] raw = ip.getAddress();
        if (ip instanceof Inet4Address) {
            out.set(JAVA_SHORT, 0, AF_INET);
            out.set(PORT, 2, (short) address.getPort());
            MemorySegment.copy(raw, 0, out, JAVA_BYTE, 4, 4);
            return 16;
        }
        out.set(JAVA_SHORT, 0, AF_INET6);
        out.set(PORT, 2, (short) address.getPort());
        // sin6_flowinfo (offset 4) stays 0.
        MemorySegment.copy(raw, 0, out, JAVA_BYTE, 8, 16);
        int scope = ((Inet6Address) ip).getScopeId();
        out.set(SCOPE, 24, scope);
        return 28;
    }

    /**
     * Reads a {@code sockaddr_in} or {@code sockaddr_in6}.
     *
     * @throws IllegalArgumentException for another family
     */
    public static InetSocketAddress read(MemorySegment in) {
        short family = in.get(JAVA_SHORT, 0);
        int port = Short.toUnsignedInt(in.get(PORT, 2));
        try {
            if (family == AF_INET) {
                byte[] raw = in.asSlice(4, 4).toArray(JAVA_BYTE);
                return new InetSocketAddress(InetAddress.getByAddress(raw), port);
            }
            if (family == AF_INET6) {
                byte[] raw = in.asSlice(8, 16).toArray(JAVA_BYTE);
                int scope = in.get(SCOPE, 24);
                return new InetSocketAddress(Inet6Address.getByAddress(null, raw, scope), port);
            }
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("malformed socket address", e);
        }
        throw new IllegalArgumentException("unsupported socket address family " + family);
    }
}
