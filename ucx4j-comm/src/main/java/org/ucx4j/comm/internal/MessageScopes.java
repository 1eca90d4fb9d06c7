package org.ucx4j.comm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The arena a received message's frames live in. Closing a shared arena synchronises with every JVM
 * thread (a handshake with each, tens of microseconds in a comm's JVM: docs/BENCHMARKS.md), far more
 * than receiving a small message costs, so:
 * <ul>
 *   <li>messages of at most {@value #SMALL} bytes share 1 MiB slabs: each message's scope
 *       bump-allocates from the current slab and holds a reference to it; a slab's arena closes once
 *       it is full (or, at the budget, idle) and every message in it was closed;
 *   <li>messages below {@value #ALONE} bytes share a group arena, up to {@value #GROUP_BYTES} bytes or
 *       {@value #GROUP_MESSAGES} messages a group; it closes as soon as no message in it is open (so
 *       an idle process keeps nothing), which in a stream of messages, received ahead, is seldom:
 *       1 MiB frames paid one close per message, a third of the time a 1 MiB message took;
 *   <li>larger messages get a shared arena of their own (the close is noise next to moving them).
 * </ul>
 * One synchronisation then serves many messages. Memory is given back (pooled buffers to their
 * pool) only when the slab or group closes, so a frame used after its message was closed reads its
 * own stale bytes, never another message's, and never crashes; it stops working when its slab or group
 * goes.
 *
 * <p>Budget: the scopes count the memory their live arenas hold ({@link #held()}: the current slab by
 * what its messages claimed (its free space is nobody's yet), a retired slab whole, a
 * group's every member until the group closes, a large message's own arena), and comms ask {@link
 * #admit} before they receive the next message. Above the limit ({@code max-unclosed-bytes}) they
 * wait: memory comes back when messages are closed, or when the cleaner reclaims messages that were
 * dropped unclosed. The cleaner only runs after a garbage collection finds them, and a heap that stays
 * nearly empty (received frames live off-heap) sees none for ever: reading 1 MiB messages without
 * closing them grew a process to 4 GiB. So a refused comm also asks for a collection ({@link
 * System#gc()}, on a thread of its own, at most every {@value #GC_HINT_MILLIS} ms, and less often, up
 * to every {@value #GC_HINT_MAX_MILLIS} ms, while no memory comes back), and the bound does
 * not depend on that hint being taken: a comm whose reader still waits after its connect timeout fails
 * with an error that names the leak.
 */
final class MessageScopes {
    static final long SMALL = 64 * 1024;
    static final long SLAB = 1024 * 1024;
    static final long ALONE = 16L * 1024 * 1024;
    /**
     * A group's payload. Small on purpose: a pooled buffer goes back to its pool only when its group
     * closes, so the buffers in use rotate through about two groups plus the messages received ahead;
     * with 64 MiB groups a stream of 1 MiB messages, 8 received ahead, wrote into 72 distinct buffers
     * (MessageScopesTest), too many for a cache, where the core's tag benchmark reuses one buffer. 8 MiB
     * keeps it under 32 buffers, for a closing arena per 8 MiB received instead of per 64 MiB (on the
     * thread that closes the group's last message).
     */
    static final long GROUP_BYTES = 8L * 1024 * 1024;

    static final int GROUP_MESSAGES = 64;
    /** The slab new small messages share; guarded by {@code this}. */
    private Slab current;
    /** The group new medium messages join; guarded by {@code this}. */
    private Group group;
    /** The least time between two collection hints. */
    static final long GC_HINT_MILLIS = 100;
    /** Bytes the live arenas hold; written with {@code this} held, read without it by {@link #roomFor}. */
    private volatile long held;
    /** Comms waiting for memory to come back; guarded by {@code this}. */
    private List<Runnable> waiting = new ArrayList<>();
    /** Whether {@link #waiting} is not empty (read without the lock, by a slab going idle). */
    private volatile boolean hasWaiters;
    /** The most time between two collection hints while memory does not come back. */
    static final long GC_HINT_MAX_MILLIS = 5000;
    /** The time between two collection hints now; guarded by {@code this}. */
    private long hintIntervalNanos = GC_HINT_MILLIS * 1_000_000;
    /** A collection hint is scheduled; guarded by {@code this}. */
    private boolean hintScheduled;
    /** When the last collection hint went (nanoTime); guarded by {@code this}. */
    private long lastHint = System.nanoTime() - GC_HINT_MILLIS * 1_000_000;

    /** Creates the scopes of one transport instance (see {@link org.ucx4j.comm.CommContext}). */
    MessageScopes() {}

    /** A scope for a message of {@code payload} bytes in {@code frames} frames. */
    Arena forMessage(long payload, int frames) {
        long need = payload + 64L * frames;
        if (payload >= ALONE) {
            synchronized (this) {
                held += payload;
            }
            return new OwnScope(Arena.ofShared(), payload);
        }
        if (payload > SMALL || need > SLAB / 4) {
            synchronized (this) {
                if (group == null
                        || (group.members > 0 && group.payload + payload > GROUP_BYTES)
                        || group.members >= GROUP_MESSAGES) {
                    group = new Group(); // a full one closes when its last message does
                }
                return new GroupScope(group, payload);
            }
        }
        synchronized (this) {
            if (current == null || !current.join(need)) {
                if (current != null) {
                    current.retire();
                }
                current = new Slab();
                current.join(need); // need <= SLAB / 4: a fresh slab has room
            }
            held += need; // the whole slab once it retires
            return new SlabScope(current);
        }
    }

    /**
     * Whether the live arenas hold less than {@code limit} now, without the lock and without side effects:
     * a comm's fast path to its next receive. False sends it to {@link #admit}, which decides.
     *
     * @param limit the comm's {@code max-unclosed-bytes}
     * @return whether there is room now
     */
    boolean roomFor(long limit) {
        return held < limit;
    }

    /**
     * Whether a comm may start receiving another message: true while the live arenas hold less than
     * {@code limit}; else {@code retry} runs (on another thread) once memory comes back, and the garbage
     * collector is asked to find messages dropped without close.
     *
     * @param limit the comm's {@code max-unclosed-bytes}
     * @param retry what to run when memory came back, or null
     * @return whether there is room now
     */
    boolean admit(long limit, Runnable retry) {
        long delayNanos;
        Slab idle = null;
        synchronized (this) {
            if (held < limit) {
                return true;
            }
            // The current slab's free space is held by no message: once every message in it was closed
            // it goes, so that the bound counts what unclosed messages hold. Kept, it alone reached a
            // bound of 1 MiB (the least max-unclosed-bytes) and stopped a reader that closed everything.
            if (current != null && current.idle()) {
                idle = current;
                current = null;
            }
        }
        if (idle != null) {
            idle.retire(); // closes it now: no message uses it
            return admit(limit, retry);
        }
        synchronized (this) {
            if (held < limit) {
                return true;
            }
            if (retry != null) {
                waiting.add(retry);
                hasWaiters = true;
            }
            if (hintScheduled) {
                return false;
            }
            hintScheduled = true;
            delayNanos = Math.max(0, lastHint + hintIntervalNanos - System.nanoTime());
        }
        CommTimers.after(Duration.ofNanos(delayNanos), this::hint);
        return false;
    }

    /**
     * Asks for a collection, then lets the waiting comms try again (those still refused schedule the
     * next hint). Received frames live off-heap: without a hint the heap may never fill enough for a
     * collection, and dropped messages are never reclaimed (see the class comment).
     */
    private void hint() {
        synchronized (this) {
            hintScheduled = false;
            lastHint = System.nanoTime();
            // Memory held on purpose comes back from no collection: ask less often the longer it stays
            // (up to every GC_HINT_MAX_MILLIS) until some comes back.
            hintIntervalNanos = Math.min(2 * hintIntervalNanos, GC_HINT_MAX_MILLIS * 1_000_000);
        }
        System.gc();
        wakeWaiters();
    }

    /** The bytes the live arenas hold now. */
    synchronized long held() {
        return held;
    }

    /**
     * Wakes the comms waiting for memory, to try again: on other threads, as this one may be a user's
     * close() or the cleaner's.
     */
    private void wakeWaiters() {
        List<Runnable> wake;
        synchronized (this) {
            if (waiting.isEmpty()) {
                return;
            }
            wake = waiting;
            waiting = new ArrayList<>();
            hasWaiters = false;
        }
        wake.forEach(CommTimers::elsewhere);
    }

    /** An arena closed and gave {@code bytes} back: waiting comms try again. */
    private void gaveBack(long bytes) {
        synchronized (this) {
            held -= bytes;
            hintIntervalNanos = GC_HINT_MILLIS * 1_000_000;
        }
        wakeWaiters();
    }

    /** A large message's own arena, counted while open. */
    private final class OwnScope implements Arena {
        private final Arena arena;
        private final long bytes;
        private final AtomicBoolean closed = new AtomicBoolean();

        OwnScope(Arena arena, long bytes) {
            this.arena = arena;
            this.bytes = bytes;
        }

        @Override
        public MemorySegment allocate(long byteSize, long byteAlignment) {
            return arena.allocate(byteSize, byteAlignment);
        }

        @Override
        public MemorySegment.Scope scope() {
            return arena.scope();
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                arena.close();
                gaveBack(bytes);
            }
        }
    }

    /** One shared arena carved into many messages' frames. */
    private final class Slab {
        final Arena arena = Arena.ofShared();
        final MemorySegment memory = arena.allocate(SLAB, 64);
        private long used;
        /**
         * What its messages announced. A frame need not come out of the slab (the host allocator takes
         * frames of 64 KiB and more from HostBufferPool, tied to this arena): counting only what was
         * carved out, a slab of 64 KiB messages never filled, never closed, and kept every pooled
         * buffer out of its pool for good: a fresh buffer per message, which made 64 KiB ping-pong
         * ten times slower than 4 KiB (docs/BENCHMARKS.md, "ucx4j demo after these changes").
         */
        private long claimed;

        private int users;
        private boolean retired;

        /** Whether no message uses it now. */
        synchronized boolean idle() {
            return users == 0;
        }

        /** A new message that announced {@code need} bytes joins, if the slab has room for them. */
        synchronized boolean join(long need) {
            if (SLAB - Math.max(used, claimed) < need) {
                return false;
            }
            users++;
            claimed += need;
            return true;
        }

        synchronized MemorySegment take(long size, long align) {
            long at = (used + align - 1) / align * align;
            if (at + size > SLAB) {
                return null;
            }
            used = at + size;
            return memory.asSlice(at, size);
        }

        void retire() {
            boolean close;
            long unclaimed;
            synchronized (this) {
                retired = true;
                close = users == 0;
                unclaimed = SLAB - claimed;
            }
            synchronized (MessageScopes.this) {
                held += unclaimed; // counted whole from now on, until it closes
            }
            if (close) {
                arena.close();
                gaveBack(SLAB);
            }
        }

        void leave() {
            boolean close;
            boolean idle;
            synchronized (this) {
                close = --users == 0 && retired;
                idle = users == 0 && !retired;
            }
            if (close) {
                arena.close();
                gaveBack(SLAB);
            } else if (idle && hasWaiters) {
                wakeWaiters(); // a refused comm's admit may now retire this idle slab
            }
        }
    }

    /** A message's view of a slab; closing it gives the message's share back. */
    private final class SlabScope implements Arena {
        private final Slab slab;
        private Arena overflow;
        private boolean closed;

        /** For a message that joined {@code slab}. */
        SlabScope(Slab slab) {
            this.slab = slab;
        }

        @Override
        public synchronized MemorySegment allocate(long byteSize, long byteAlignment) {
            if (closed) {
                throw new IllegalStateException("message scope already closed");
            }
            MemorySegment s = slab.take(byteSize, Math.max(1, byteAlignment));
            if (s != null) {
                return s;
            }
            // More than the message announced (an allocator asking for extra): an arena of its own.
            if (overflow == null) {
                overflow = Arena.ofShared();
            }
            return overflow.allocate(byteSize, byteAlignment);
        }

        @Override
        public MemorySegment.Scope scope() {
            return slab.arena.scope();
        }

        @Override
        public void close() {
            Arena o;
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
                o = overflow;
            }
            if (o != null) {
                o.close();
            }
            slab.leave();
        }
    }

    /**
     * New messages go to a new slab and group from now on; the current ones close when their last
     * message does. What a transport does when its context closes (and tests, for scopes of their own).
     */
    synchronized void startAfresh() {
        group = null;
        if (current != null) {
            current.retire();
            current = null;
        }
    }

    /** One shared arena for several medium messages; its fields are guarded by the owning {@code MessageScopes}. */
    private final class Group {
        final Arena arena = Arena.ofShared();
        long payload;
        int members;
        int open;

        /** A member closed: with none left open, the group closes (and new messages start another). */
        void leave() {
            boolean close;
            long bytes;
            synchronized (MessageScopes.this) {
                close = --open == 0;
                if (close && group == this) {
                    group = null;
                }
                bytes = payload;
            }
            if (close) {
                arena.close();
                gaveBack(bytes);
            }
        }
    }

    /** A medium message's view of its group. */
    private final class GroupScope implements Arena {
        private final Group g;
        private boolean closed;

        /** With the owning {@code MessageScopes} held. */
        GroupScope(Group g, long payload) {
            this.g = g;
            held += payload;
            g.payload += payload;
            g.members++;
            g.open++;
        }

        @Override
        public synchronized MemorySegment allocate(long byteSize, long byteAlignment) {
            if (closed) {
                throw new IllegalStateException("message scope already closed");
            }
            return g.arena.allocate(byteSize, byteAlignment);
        }

        @Override
        public MemorySegment.Scope scope() {
            return g.arena.scope();
        }

        @Override
        public void close() {
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
            }
            g.leave();
        }
    }
}
