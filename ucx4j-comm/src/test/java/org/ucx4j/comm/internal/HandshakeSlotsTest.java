package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The slots' bounds and the eviction of the oldest handshake, on a clock the test moves. */
class HandshakeSlotsTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private HandshakeSlots slots(int max, int perSource, Duration evictionAge) {
        return new HandshakeSlots(max, perSource, evictionAge, now::get);
    }

    private static InetSocketAddress from(String ip) {
        return new InetSocketAddress(ip, 40000);
    }

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void aNewcomerTakesTheOldestSlotOnceItIsOldEnough() {
        HandshakeSlots s = slots(2, 2, Duration.ofSeconds(1));
        AtomicInteger cutA = new AtomicInteger();
        AtomicInteger cutB = new AtomicInteger();
        HandshakeSlots.Slot a = s.take(from("127.0.0.2")).slot();
        a.onEvict(cutA::incrementAndGet);
        advance(Duration.ofMillis(400));
        HandshakeSlots.Slot b = s.take(from("127.0.0.3")).slot();
        b.onEvict(cutB::incrementAndGet);

        // Full, and the oldest is 0.4 s old: refused.
        advance(Duration.ofMillis(500));
        assertEquals(HandshakeSlots.Refusal.FULL, s.take(from("127.0.0.4")).refusal());

        // The oldest is 1 s old: it gives its slot up, and only it.
        advance(Duration.ofMillis(100));
        HandshakeSlots.Outcome c = s.take(from("127.0.0.4"));
        assertNotNull(c.slot());
        assertSame(a, c.evicted());
        assertTrue(a.evicted());
        assertEquals(1, cutA.get());
        assertEquals(0, cutB.get());
        assertEquals(2, s.taken());

        // The evicted handshake ending later changes nothing; the others' slots count as before.
        a.close();
        assertEquals(2, s.taken());
        assertEquals(HandshakeSlots.Refusal.FULL, s.take(from("127.0.0.5")).refusal());
        advance(Duration.ofMillis(600)); // b is 1.2 s old now
        assertSame(b, s.take(from("127.0.0.5")).evicted());
        assertEquals(1, cutB.get());
        c.slot().close();
        assertEquals(1, s.taken());
    }

    @Test
    void onlyHandshakesThatCanBeCutShortAreEvicted() {
        HandshakeSlots s = slots(2, 2, Duration.ofMillis(100));
        HandshakeSlots.Slot silent = s.take(from("127.0.0.2")).slot(); // its handshake not started yet
        HandshakeSlots.Slot started = s.take(from("127.0.0.3")).slot();
        AtomicInteger cut = new AtomicInteger();
        started.onEvict(cut::incrementAndGet);
        advance(Duration.ofSeconds(1));
        assertSame(started, s.take(from("127.0.0.4")).evicted());
        assertFalse(silent.evicted());
        assertEquals(1, cut.get());
        // An action registered after the eviction runs at once.
        AtomicInteger late = new AtomicInteger();
        started.onEvict(late::incrementAndGet);
        assertEquals(1, late.get());
    }

    @Test
    void aSourceAtItsShareEvictsOnlyItsOwnOldestHandshake() {
        // Every local client is one source (127.0.0.1): one local process holding its share with silent
        // sockets must not keep the others out for longer than the eviction age.
        HandshakeSlots s = slots(3, 1, Duration.ofMillis(100));
        AtomicInteger cutOther = new AtomicInteger();
        AtomicInteger cutSilent = new AtomicInteger();
        s.take(from("127.0.0.3")).slot().onEvict(cutOther::incrementAndGet); // another source, older
        advance(Duration.ofMillis(10));
        HandshakeSlots.Slot silent = s.take(from("127.0.0.2")).slot();
        silent.onEvict(cutSilent::incrementAndGet);

        // Its share taken, and its handshake young: refused.
        advance(Duration.ofMillis(50));
        HandshakeSlots.Outcome young = s.take(from("127.0.0.2"));
        assertEquals(HandshakeSlots.Refusal.SOURCE_FULL, young.refusal());
        assertNull(young.evicted());

        // Old enough: the newcomer from that source takes that source's slot, not the older one of the other.
        advance(Duration.ofSeconds(1));
        HandshakeSlots.Outcome next = s.take(from("127.0.0.2"));
        assertNotNull(next.slot());
        assertSame(silent, next.evicted());
        assertEquals(1, cutSilent.get());
        assertEquals(0, cutOther.get());
        assertEquals(2, s.taken());
        // The newcomer's own slot is young: the share holds again.
        assertEquals(
                HandshakeSlots.Refusal.SOURCE_FULL, s.take(from("127.0.0.2")).refusal());
    }

    @Test
    void ageZeroNeverEvicts() {
        HandshakeSlots s = slots(1, 1, Duration.ZERO);
        s.take(from("127.0.0.2")).slot().onEvict(() -> {});
        advance(Duration.ofDays(1));
        assertEquals(HandshakeSlots.Refusal.FULL, s.take(null).refusal());
    }
}
