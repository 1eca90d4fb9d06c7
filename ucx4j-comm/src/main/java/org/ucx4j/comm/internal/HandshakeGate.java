package org.ucx4j.comm.internal;

import java.net.SocketAddress;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.ucx4j.comm.CommOptions;

/**
 * A listener's door, the same for {@code tcp://} and {@code ucx://}: the {@link HandshakeSlots} a
 * connection needs before its handshake runs, and the account of what was refused (a count and the
 * last reason, for tests; the {@link RefusalLog}, rate-limited, for people).
 *
 * <p>Threading: safe from any thread.
 */
final class HandshakeGate {
    private final HandshakeSlots slots;
    private final RefusalLog log;
    private final AtomicLong refusals = new AtomicLong();
    private volatile String lastRefusal = "";

    /**
     * @param logger where refusals are logged
     * @param where the listener's address, as log lines start
     * @param options the listener's options ({@code max-pending-handshakes}, per source, and
     *     {@code handshake-eviction-age})
     */
    HandshakeGate(Logger logger, String where, CommOptions options) {
        this.slots = new HandshakeSlots(
                options.maxPendingHandshakes(),
                options.maxPendingHandshakesPerSource(),
                options.handshakeEvictionAge());
        this.log = new RefusalLog(logger, where);
    }

    /**
     * A slot for a handshake with {@code peer}, or null when it has none: then the refusal is counted
     * and logged, and the caller closes the connection at once. The slot may be one a newcomer took from
     * the oldest handshake ({@link HandshakeSlots}); that handshake fails, and its failure is what is logged.
     *
     * @param peer the connection's remote address, or null where there is none to trust (IP-less)
     * @param what what is refused, for the log line ({@code "a connection"})
     */
    HandshakeSlots.Slot admit(SocketAddress peer, String what) {
        HandshakeSlots.Outcome o = slots.take(peer);
        if (o.slot() == null) {
            refused(o.refusal().key(), slots.why(o.refusal(), peer), "refused " + what + ": {}");
        }
        return o.slot();
    }

    /**
     * Counts a refusal and logs it, rate-limited.
     *
     * @param kind what the log's summary counts it as
     * @param why the reason, kept as {@link #lastRefusal()}
     * @param format the log line after the listener's address; its last {@code {}} is {@code why}
     * @param args the format's arguments before {@code why}
     */
    void refused(String kind, String why, String format, Object... args) {
        lastRefusal = String.valueOf(why);
        refusals.incrementAndGet();
        Object[] all = Arrays.copyOf(args, args.length + 1);
        all[args.length] = lastRefusal;
        log.refused(kind, format, all);
    }

    /** How many connections (and accept-tag messages) were refused. */
    long refusals() {
        return refusals.get();
    }

    /** Why the last one was. */
    String lastRefusal() {
        return lastRefusal;
    }

    /** The slots, for tests. */
    HandshakeSlots slots() {
        return slots;
    }
}
