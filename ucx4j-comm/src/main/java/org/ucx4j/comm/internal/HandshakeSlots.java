package org.ucx4j.comm.internal;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The slots for handshakes under way at one listener: at most {@code max-pending-handshakes} in all,
 * and at most {@code max-pending-handshakes-per-source} from one source, so that one address cannot
 * take every slot with silent connections and keep everyone else out until its handshakes time out.
 *
 * <p>A source is the peer's IPv4 address, or its IPv6 /64 (one IPv6 host usually has a whole /64 to
 * choose addresses from). IP-less clients, whose HELLO arrives through UCX with no address anyone
 * vouches for, count against the total only ({@link #take(SocketAddress)} with null).
 *
 * <p>Threading: safe from any thread; a {@link Slot} is released once, by whoever closes it first.
 */
final class HandshakeSlots {
    private final int max;
    private final int perSource;
    private int taken;
    private final Map<Source, Integer> bySource = new HashMap<>();

    /** Why a connection got no slot. */
    enum Refusal {
        /** Every slot is taken. */
        FULL("max-pending-handshakes"),
        /** This source holds its share already. */
        SOURCE_FULL("max-pending-handshakes-per-source");

        private final String key;

        Refusal(String key) {
            this.key = key;
        }

        /** The configuration key whose limit was reached. */
        String key() {
            return key;
        }
    }

    /** A slot taken, or why none was: exactly one of the two is set. */
    record Outcome(Slot slot, Refusal refusal) {}

    /**
     * @param max slots in all, at least 1
     * @param perSource slots one source may hold; more than {@code max} means {@code max}
     */
    HandshakeSlots(int max, int perSource) {
        this.max = max;
        this.perSource = Math.min(max, perSource);
    }

    /**
     * Takes a slot for a handshake with {@code peer}, or says why not.
     *
     * @param peer the connection's remote address, or null where there is none to trust (IP-less)
     */
    Outcome take(SocketAddress peer) {
        Source source =
                peer instanceof InetSocketAddress a && a.getAddress() != null ? Source.of(a.getAddress()) : null;
        synchronized (this) {
            if (taken >= max) {
                return new Outcome(null, Refusal.FULL);
            }
            if (source != null) {
                int held = bySource.getOrDefault(source, 0);
                if (held >= perSource) {
                    return new Outcome(null, Refusal.SOURCE_FULL);
                }
                bySource.put(source, held + 1);
            }
            taken++;
        }
        return new Outcome(new Slot(source), null);
    }

    /**
     * Says why a connection got no slot, as logs and {@code lastRefusal} show it.
     *
     * @param refusal the refusal
     * @param peer the connection's remote address, or null
     */
    String why(Refusal refusal, SocketAddress peer) {
        return switch (refusal) {
            case FULL -> max + " handshakes under way (" + refusal.key() + ")";
            case SOURCE_FULL ->
                perSource + " handshakes under way from "
                        + (peer instanceof InetSocketAddress a ? a.getAddress().getHostAddress() : "one source")
                        + " (" + refusal.key() + ")";
        };
    }

    /** Slots taken now, for tests. */
    synchronized int taken() {
        return taken;
    }

    /** The most one source may hold. */
    int perSource() {
        return perSource;
    }

    private synchronized void release(Source source) {
        taken--;
        if (source != null) {
            bySource.computeIfPresent(source, (s, held) -> held == 1 ? null : held - 1);
        }
    }

    /** One handshake's slot; close it when the handshake ends, however it ends. Idempotent. */
    final class Slot implements AutoCloseable {
        private final Source source;
        private final AtomicBoolean released = new AtomicBoolean();

        private Slot(Source source) {
            this.source = source;
        }

        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                release(source);
            }
        }
    }

    /** An IPv4 address, or the first 64 bits of an IPv6 one. */
    private record Source(byte[] prefix) {
        static Source of(InetAddress address) {
            byte[] b = address.getAddress();
            return new Source(address instanceof Inet4Address ? b : Arrays.copyOf(b, 8));
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Source s && Arrays.equals(prefix, s.prefix);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(prefix);
        }

        @Override
        public String toString() {
            return Arrays.toString(prefix);
        }
    }
}
