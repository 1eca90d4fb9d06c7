package org.ucx4j.comm.internal;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * The slots for handshakes under way at one listener: at most {@code max-pending-handshakes} in all,
 * and at most {@code max-pending-handshakes-per-source} from one source, so that one address cannot
 * take every slot with silent connections and keep everyone else out until its handshakes time out.
 *
 * <p>A source is the peer's IPv4 address, or its IPv6 /64 (one IPv6 host usually has a whole /64 to
 * choose addresses from). IP-less clients, whose HELLO arrives through UCX with no address anyone
 * vouches for, count against the total only ({@link #take(SocketAddress)} with null).
 *
 * <p>When every slot is taken, a newcomer takes the slot of the oldest handshake that has been under way
 * for at least the eviction age ({@code handshake-eviction-age}) and can be cut short ({@link
 * Slot#onEvict}): that one's cut-short action runs (it closes the connection), and its handshake fails.
 * Honest handshakes take milliseconds; so only slow or silent peers are cut, and keeping honest clients out
 * takes new connections faster than they age, not a few silent ones held until {@code connect-timeout}.
 * The per-source bound is checked first, and the same way: a newcomer from a source that holds its share
 * takes the oldest slot of that source (never another source's) once it is old enough. Every local
 * client comes from one source (127.0.0.1, or the host's own address): before this, one local process
 * that held its share with silent sockets, reopened as they timed out, kept every other local client
 * out for as long as it kept at it.
 *
 * <p>Threading: safe from any thread; a {@link Slot} is released once, by whoever closes or evicts it
 * first; cut-short actions run on the thread of the {@link #take} that evicts, outside this object's lock.
 */
final class HandshakeSlots {
    private final int max;
    private final int perSource;
    /** Zero: never evict. */
    private final long evictionAgeNanos;

    private final LongSupplier clock;
    private int taken;
    private final Map<Source, Integer> bySource = new HashMap<>();
    /** The slots held, oldest first. */
    private final LinkedHashSet<Slot> held = new LinkedHashSet<>();

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

    /**
     * A slot taken, or why none was: exactly one of {@code slot} and {@code refusal} is set; {@code evicted}
     * is the handshake whose slot the newcomer took, if it took one.
     */
    record Outcome(Slot slot, Refusal refusal, Slot evicted) {}

    /**
     * @param max slots in all, at least 1
     * @param perSource slots one source may hold; more than {@code max} means {@code max}
     * @param evictionAge how old the oldest handshake (of the newcomer's source, when that holds its share)
     *     must be for a newcomer to take its slot when all are taken; zero: never
     */
    HandshakeSlots(int max, int perSource, Duration evictionAge) {
        this(max, perSource, evictionAge, System::nanoTime);
    }

    /** As above, with a clock ({@link System#nanoTime()} in use; tests move their own). */
    HandshakeSlots(int max, int perSource, Duration evictionAge, LongSupplier clock) {
        this.max = max;
        this.perSource = Math.min(max, perSource);
        this.evictionAgeNanos = evictionAge.toNanos();
        this.clock = clock;
    }

    /**
     * Takes a slot for a handshake with {@code peer}, or says why not.
     *
     * @param peer the connection's remote address, or null where there is none to trust (IP-less)
     */
    Outcome take(SocketAddress peer) {
        Source source =
                peer instanceof InetSocketAddress a && a.getAddress() != null ? Source.of(a.getAddress()) : null;
        Slot slot;
        Slot evicted = null;
        synchronized (this) {
            if (source != null && bySource.getOrDefault(source, 0) >= perSource) {
                evicted = oldestEvictable(source);
                if (evicted == null) {
                    return new Outcome(null, Refusal.SOURCE_FULL, null);
                }
                evicted.releaseNow();
            }
            if (taken >= max) {
                evicted = oldestEvictable(null);
                if (evicted == null) {
                    return new Outcome(null, Refusal.FULL, null);
                }
                evicted.releaseNow();
            }
            if (source != null) {
                bySource.merge(source, 1, Integer::sum);
            }
            taken++;
            slot = new Slot(source, clock.getAsLong());
            held.add(slot);
        }
        if (evicted != null) {
            evicted.cutShort();
        }
        return new Outcome(slot, null, evicted);
    }

    /**
     * With this object's lock: the oldest slot of {@code source} (of any source when null) old enough to
     * be evicted and that can be cut short, or null.
     */
    private Slot oldestEvictable(Source source) {
        if (evictionAgeNanos <= 0) {
            return null;
        }
        long now = clock.getAsLong();
        for (Slot s : held) {
            if (now - s.takenAt < evictionAgeNanos) {
                return null; // the rest are younger still
            }
            // A slot being closed (its handshake just ended) frees nothing if taken: skipped.
            if (s.evictor != null && !s.released.get() && (source == null || source.equals(s.source))) {
                return s;
            }
        }
        return null;
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

    private synchronized void release(Slot slot) {
        forget(slot);
    }

    /** With this object's lock: a slot is free again. */
    private void forget(Slot slot) {
        taken--;
        held.remove(slot);
        if (slot.source != null) {
            bySource.computeIfPresent(slot.source, (s, n) -> n == 1 ? null : n - 1);
        }
    }

    /**
     * One handshake's slot; close it when the handshake ends, however it ends. Idempotent. It may be taken
     * by a newcomer first ({@link #onEvict}): then closing it does nothing.
     */
    final class Slot implements AutoCloseable {
        private final Source source;
        private final long takenAt;
        private final AtomicBoolean released = new AtomicBoolean();
        /** Guarded by the slots' lock; null until {@link #onEvict}. */
        private Runnable evictor;

        private volatile boolean evicted;

        private Slot(Source source, long takenAt) {
            this.source = source;
            this.takenAt = takenAt;
        }

        /**
         * Makes this handshake evictable: {@code cutShort} closes its connection (once, on the evicting
         * thread; at once if it was evicted already).
         *
         * @param cutShort what ends the handshake early
         */
        void onEvict(Runnable cutShort) {
            synchronized (HandshakeSlots.this) {
                if (!evicted) {
                    evictor = cutShort;
                    return;
                }
            }
            cutShort.run();
        }

        /** Whether a newcomer took this slot (the handshake was cut short). */
        boolean evicted() {
            return evicted;
        }

        /** With the slots' lock: gives the slot up for a newcomer. */
        private void releaseNow() {
            evicted = true;
            if (released.compareAndSet(false, true)) {
                forget(this);
            }
        }

        /** Outside the lock, after {@link #releaseNow()}: runs the cut-short action. */
        private void cutShort() {
            Runnable r;
            synchronized (HandshakeSlots.this) {
                r = evictor;
                evictor = null;
            }
            if (r != null) {
                r.run();
            }
        }

        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                release(this);
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
