package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.ucx4j.HostBufferPool;

/** Small messages share slabs; a slab is freed once full and every message in it was closed. */
class MessageScopesTest {
    /** Each test has scopes of its own (JUnit makes an instance per test). */
    private final MessageScopes messageScopes = new MessageScopes();

    @Test
    void slabsAreSharedAndFreedWhenFullAndEveryMessageClosed() {
        List<Arena> scopes = new ArrayList<>();
        List<MemorySegment> frames = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            Arena a = messageScopes.forMessage(60_000, 1);
            MemorySegment s = a.allocate(60_000, 64);
            s.fill((byte) i);
            scopes.add(a);
            frames.add(s);
        }
        // No two messages overlap.
        for (int i = 0; i < 60; i++) {
            assertEquals((byte) i, frames.get(i).get(ValueLayout.JAVA_BYTE, 0));
            assertEquals((byte) i, frames.get(i).get(ValueLayout.JAVA_BYTE, 59_999));
        }
        MemorySegment middle = frames.get(25); // in a slab this test filled and left behind
        assertTrue(middle.scope().isAlive());
        for (int i = 0; i < 59; i++) {
            scopes.get(i).close();
            scopes.get(i).close(); // idempotent
        }
        assertFalse(middle.scope().isAlive(), "a full slab whose messages all closed is freed");
        assertTrue(frames.get(59).scope().isAlive(), "the open message keeps its slab");
        scopes.get(59).close();
    }

    @Test
    void framesFromThePoolStillFillASlabSoTheirBuffersGoBack() {
        HostBufferPool pool = HostBufferPool.create(64L << 20);
        List<Arena> scopes = new ArrayList<>();
        for (int i = 0; i < 40; i++) { // 64 KiB: a slab's message size, and the pool's smallest class
            Arena a = messageScopes.forMessage(HostBufferPool.MIN_POOLED, 1);
            pool.allocate(HostBufferPool.MIN_POOLED, a);
            scopes.add(a);
        }
        MemorySegment.Scope first = scopes.getFirst().scope();
        assertNotSame(first, scopes.getLast().scope(), "40 x 64 KiB announced: more than one 1 MiB slab");
        for (Arena a : scopes.subList(0, 20)) {
            a.close();
        }
        assertFalse(first.isAlive(), "the first slab is full and its messages closed");
        assertTrue(pool.retainedBytes() >= 15 * HostBufferPool.MIN_POOLED, "its buffers went back to the pool");
        for (Arena a : scopes.subList(20, 40)) {
            a.close();
        }
    }

    @Test
    void largeMessagesGetAnArenaOfTheirOwn() {
        Arena a = messageScopes.forMessage(MessageScopes.ALONE, 1);
        Arena b = messageScopes.forMessage(MessageScopes.ALONE, 1);
        MemorySegment s = a.allocate(1 << 20, 64);
        assertNotSame(a.scope(), b.scope());
        a.close();
        assertFalse(s.scope().isAlive());
        b.close();
    }

    @Test
    void mediumMessagesShareAGroupThatClosesWithItsLastOpenMessage() {
        Arena a = messageScopes.forMessage(1 << 20, 1);
        Arena b = messageScopes.forMessage(1 << 20, 1);
        MemorySegment sa = a.allocate(1 << 20, 64);
        MemorySegment sb = b.allocate(1 << 20, 64);
        sa.fill((byte) 1);
        sb.fill((byte) 2);
        assertSame(a.scope(), b.scope(), "one group");
        a.close();
        a.close(); // idempotent
        assertThrows(IllegalStateException.class, () -> a.allocate(8, 8));
        assertTrue(sa.scope().isAlive(), "b keeps the group open");
        assertEquals((byte) 1, sa.get(ValueLayout.JAVA_BYTE, 0), "a's stale bytes are its own");
        b.close();
        assertFalse(sb.scope().isAlive(), "no open message left: the group closed");
        Arena c = messageScopes.forMessage(1 << 20, 1);
        assertTrue(c.scope().isAlive(), "the next message starts a new group");
        c.close();
    }

    /**
     * A reader that keeps 8 messages of 1 MiB received ahead and closes each one after reading it (as
     * {@code UcxComm}'s pipeline and a reader do): the pooled buffers it writes into must come back
     * soon, so that a long stream rotates through a few MiB of buffers that stay in cache. With the
     * 64 MiB groups of before, 1,000 messages went through 72 distinct buffers.
     */
    @Test
    void aStreamOfMediumMessagesReusesAFewPooledBuffers() {
        HostBufferPool pool = HostBufferPool.create(512L << 20);
        java.util.ArrayDeque<Arena> ahead = new java.util.ArrayDeque<>();
        java.util.Set<Long> buffers = new java.util.HashSet<>();
        long mib = 1 << 20;
        for (int i = 0; i < 1000; i++) {
            Arena a = messageScopes.forMessage(mib, 1);
            buffers.add(pool.allocate(mib, a).address());
            ahead.add(a);
            if (ahead.size() > 8) {
                ahead.poll().close();
            }
        }
        ahead.forEach(Arena::close);
        long bound = 32; // 8 received ahead, the group they fill and the one before it
        assertTrue(
                buffers.size() <= bound,
                buffers.size() + " distinct 1 MiB buffers for 1,000 messages; at most " + bound + " expected");
        assertEquals(0, messageScopes.held(), "every group closed");
    }

    @Test
    void aFullGroupHandsOverToANewOne() {
        List<Arena> open = new ArrayList<>();
        for (long bytes = 0; bytes < MessageScopes.GROUP_BYTES; bytes += 8L << 20) {
            open.add(messageScopes.forMessage(8L << 20, 1));
        }
        Arena next = messageScopes.forMessage(8L << 20, 1);
        assertNotSame(open.getFirst().scope(), next.scope(), "64 MiB in the first group: a second one");
        for (Arena a : open) {
            a.close();
        }
        assertFalse(open.getFirst().scope().isAlive());
        assertTrue(next.scope().isAlive());
        next.close();
    }

    @Test
    void theBudgetCountsLiveArenasAndWakesWaitersWhenMemoryComesBack() throws Exception {
        long mib = 1 << 20;
        Arena large = messageScopes.forMessage(MessageScopes.ALONE, 1);
        Arena medium = messageScopes.forMessage(mib, 1);
        Arena small = messageScopes.forMessage(100, 1);
        // The current slab counts what its message claimed (100 bytes and 64 per frame), not its free space.
        assertEquals(MessageScopes.ALONE + mib + 164, messageScopes.held());
        java.util.concurrent.CompletableFuture<Void> woken = new java.util.concurrent.CompletableFuture<>();
        assertFalse(messageScopes.admit(MessageScopes.ALONE, () -> woken.complete(null)), "over the limit");
        assertTrue(messageScopes.admit(messageScopes.held() + 1, null), "under the limit");
        large.close();
        woken.get(10, java.util.concurrent.TimeUnit.SECONDS); // closing gave memory back: the waiter retries
        assertEquals(mib + 164, messageScopes.held());
        medium.close(); // the group's last open message: the group closes
        small.close();
        messageScopes.startAfresh(); // the slab retires and, with no message open, closes
        assertEquals(0, messageScopes.held());
    }

    @Test
    void aRetiredSlabCountsWholeUntilItsLastMessageCloses() {
        Arena first = messageScopes.forMessage(100, 1);
        messageScopes.startAfresh(); // retires the slab; its message keeps it open
        assertEquals(MessageScopes.SLAB, messageScopes.held(), "a retired slab holds all its memory");
        first.close();
        assertEquals(0, messageScopes.held());
    }

    @Test
    void anIdleSlabAtTheBudgetGoesInsteadOfStoppingTheReader() {
        // Messages that claim the whole slab, all closed: the slab alone is at a budget of one slab.
        List<Arena> messages = new ArrayList<>();
        for (long claimed = 0; claimed < MessageScopes.SLAB; claimed += MessageScopes.SMALL) {
            messages.add(messageScopes.forMessage(MessageScopes.SMALL - 64, 1)); // claims SMALL with its frame
        }
        messages.forEach(Arena::close);
        assertEquals(MessageScopes.SLAB, messageScopes.held());
        assertTrue(messageScopes.admit(MessageScopes.SLAB, null), "nothing is held by an open message");
        assertEquals(0, messageScopes.held());
    }
}
