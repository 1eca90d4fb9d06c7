package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Small messages share slabs; a slab is freed once full and every message in it was closed. */
class MessageScopesTest {
    @Test
    void slabsAreSharedAndFreedWhenFullAndEveryMessageClosed() {
        List<Arena> scopes = new ArrayList<>();
        List<MemorySegment> frames = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            Arena a = MessageScopes.forMessage(60_000, 1);
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
    void largeMessagesGetAnArenaOfTheirOwn() {
        Arena a = MessageScopes.forMessage(1 << 20, 1);
        MemorySegment s = a.allocate(1 << 20, 64);
        a.close();
        assertFalse(s.scope().isAlive());
    }
}
