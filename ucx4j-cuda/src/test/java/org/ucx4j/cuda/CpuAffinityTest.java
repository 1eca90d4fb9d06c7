package org.ucx4j.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.BitSet;
import org.junit.jupiter.api.Test;

/** CPU lists and {@code sched_getaffinity}/{@code sched_setaffinity} of a thread (no GPU needed). */
class CpuAffinityTest {
    @Test
    void listsRoundTrip() {
        BitSet s = CpuAffinity.parse("0-3, 8,10-11");
        assertEquals("0-3,8,10-11", CpuAffinity.format(s));
        assertEquals("", CpuAffinity.format(new BitSet()));
        for (String bad : new String[] {"", "3-1", "a", "1,,2", "9000"}) {
            assertThrows(IllegalArgumentException.class, () -> CpuAffinity.parse(bad), bad);
        }
    }

    @Test
    void aPinnedThreadHasTheSetAndTheCallerKeepsItsOwn() throws Exception {
        BitSet before = CpuAffinity.allowed();
        assertFalse(before.isEmpty());
        BitSet one = new BitSet();
        one.set(before.nextSetBit(0));
        assertEquals(one, CpuAffinity.callPinned(one, CpuAffinity::allowed));
        assertEquals(before, CpuAffinity.allowed());
        IllegalStateException e = assertThrows(
                IllegalStateException.class, () -> CpuAffinity.callPinned(CpuAffinity.parse("8191"), () -> null));
        assertTrue(e.getMessage().contains("sched_setaffinity failed"), e.getMessage());
    }
}
