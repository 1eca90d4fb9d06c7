package org.ucx4j.comm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The arena a received message's frames live in. Closing a shared arena synchronises with every JVM
 * thread (a handshake with each, tens of microseconds in a comm's JVM: docs/BENCHMARKS.md), far more
 * than receiving a small message costs, so:
 * <ul>
 *   <li>messages of at most {@value #SMALL} bytes share 1 MiB slabs: each message's scope
 *       bump-allocates from the current slab and holds a reference to it; a slab's arena closes once
 *       it is full and every message in it was closed;
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
 */
final class MessageScopes {
    static final long SMALL = 64 * 1024;
    static final long SLAB = 1024 * 1024;
    static final long ALONE = 16L * 1024 * 1024;
    static final long GROUP_BYTES = 64L * 1024 * 1024;
    static final int GROUP_MESSAGES = 64;
    /** The slab new small messages share; guarded by {@code this}. */
    private Slab current;
    /** The group new medium messages join; guarded by {@code this}. */
    private Group group;

    /** Creates the scopes of one transport instance (see {@link org.ucx4j.comm.CommContext}). */
    MessageScopes() {}

    /** A scope for a message of {@code payload} bytes in {@code frames} frames. */
    Arena forMessage(long payload, int frames) {
        long need = payload + 64L * frames;
        if (payload >= ALONE) {
            return Arena.ofShared();
        }
        if (payload > SMALL || need > SLAB / 4) {
            synchronized (this) {
                if (group == null || group.payload + payload > GROUP_BYTES || group.members >= GROUP_MESSAGES) {
                    group = new Group(); // a full one closes when its last message does
                }
                return new GroupScope(group, payload);
            }
        }
        synchronized (this) {
            if (current == null || current.left() < need) {
                if (current != null) {
                    current.retire();
                }
                current = new Slab();
            }
            return new SlabScope(current, need);
        }
    }

    /** One shared arena carved into many messages' frames. */
    private static final class Slab {
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

        synchronized long left() {
            return SLAB - Math.max(used, claimed);
        }

        synchronized void join(long need) {
            users++;
            claimed += need;
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
            synchronized (this) {
                retired = true;
                close = users == 0;
            }
            if (close) {
                arena.close();
            }
        }

        void leave() {
            boolean close;
            synchronized (this) {
                close = --users == 0 && retired;
            }
            if (close) {
                arena.close();
            }
        }
    }

    /** A message's view of a slab; closing it gives the message's share back. */
    private static final class SlabScope implements Arena {
        private final Slab slab;
        private Arena overflow;
        private boolean closed;

        SlabScope(Slab slab, long need) {
            this.slab = slab;
            slab.join(need);
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
            synchronized (MessageScopes.this) {
                close = --open == 0;
                if (close && group == this) {
                    group = null;
                }
            }
            if (close) {
                arena.close();
            }
        }
    }

    /** A medium message's view of its group. */
    private static final class GroupScope implements Arena {
        private final Group g;
        private boolean closed;

        /** With the owning {@code MessageScopes} held. */
        GroupScope(Group g, long payload) {
            this.g = g;
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
