package org.ucx4j.comm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The arena a received message's frames live in. Closing a shared arena synchronises with every JVM
 * thread (60-80 usec measured), far more than receiving a small message costs, so messages of at most
 * {@value #SMALL} bytes share 1 MiB slabs: each message's scope bump-allocates from the current slab
 * and holds a reference to it; a slab's arena closes once it is full and every message in it was
 * closed. One synchronisation then serves many small messages. Freed memory is never reused inside a
 * slab, so a frame used after its message was closed reads stale bytes, never another message's, and
 * never crashes; it stops working when the slab goes. Larger messages get a shared arena of their own.
 */
final class MessageScopes {
    static final long SMALL = 64 * 1024;
    static final long SLAB = 1024 * 1024;
    private static Slab current;

    private MessageScopes() {}

    /** A scope for a message of {@code payload} bytes in {@code frames} frames. */
    static Arena forMessage(long payload, int frames) {
        long need = payload + 64L * frames;
        if (payload > SMALL || need > SLAB / 4) {
            return Arena.ofShared();
        }
        synchronized (MessageScopes.class) {
            if (current == null || current.left() < need) {
                if (current != null) {
                    current.retire();
                }
                current = new Slab();
            }
            return new SlabScope(current);
        }
    }

    /** One shared arena carved into many messages' frames. */
    private static final class Slab {
        final Arena arena = Arena.ofShared();
        final MemorySegment memory = arena.allocate(SLAB, 64);
        private long used;
        private int users;
        private boolean retired;

        synchronized long left() {
            return SLAB - used;
        }

        synchronized void join() {
            users++;
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

        SlabScope(Slab slab) {
            this.slab = slab;
            slab.join();
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
}
