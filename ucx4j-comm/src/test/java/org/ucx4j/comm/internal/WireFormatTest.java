package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;
import org.ucx4j.comm.CommProtocolException;

/**
 * The frame table's checks, on tables built in memory: the sum of the sizes against max-message-size; and
 * the flow control record's, round trip and refusals.
 */
class WireFormatTest {
    private static final long GIB = 1L << 30;

    /** A frame table (no fixed header) of host frames of the given sizes. */
    private static MemorySegment table(long... sizes) {
        MemorySegment t = MemorySegment.ofArray(new byte[sizes.length * WireFormat.ENTRY_BYTES]);
        for (int i = 0; i < sizes.length; i++) {
            t.set(WireFormat.U64, (long) i * WireFormat.ENTRY_BYTES, sizes[i]);
        }
        return t;
    }

    @Test
    void aTableAddingUpToTheLimitPasses() {
        WireFormat.Table t = WireFormat.readTable(table(GIB, GIB, 2 * GIB), 0, 3, 64 * GIB, 4 * GIB);
        assertEquals(4 * GIB, t.total());
    }

    @Test
    void aTableAddingUpToMoreIsRefusedNamingTotalLimitAndKey() {
        CommProtocolException e = assertThrows(
                CommProtocolException.class,
                () -> WireFormat.readTable(table(GIB, GIB, 2 * GIB + 1), 0, 3, 64 * GIB, 4 * GIB));
        assertTrue(e.getMessage().contains("3 frames"), e.getMessage());
        assertTrue(e.getMessage().contains(Long.toString(4 * GIB + 1)), e.getMessage());
        assertTrue(e.getMessage().contains("max-message-size is " + 4 * GIB), e.getMessage());
    }

    @Test
    void theMaximumFrameCountOfLargeFramesIsRefused() {
        long[] sizes = new long[100_000];
        java.util.Arrays.fill(sizes, 16 * GIB);
        CommProtocolException e = assertThrows(
                CommProtocolException.class,
                () -> WireFormat.readTable(table(sizes), 0, sizes.length, 64 * GIB, 4 * GIB));
        assertTrue(e.getMessage().contains("100000 frames claims " + 100_000 * 16 * GIB), e.getMessage());
        assertTrue(e.getMessage().contains("max-message-size"), e.getMessage());
    }

    @Test
    void sizesOverflowingALongAreRefusedNamingTheKey() {
        CommProtocolException e = assertThrows(
                CommProtocolException.class,
                () -> WireFormat.readTable(
                        table(Long.MAX_VALUE / 2 + 1, Long.MAX_VALUE / 2 + 1), 0, 2, Long.MAX_VALUE, Long.MAX_VALUE));
        assertTrue(e.getMessage().contains("2^63"), e.getMessage());
        assertTrue(e.getMessage().contains("max-message-size"), e.getMessage());
    }

    @Test
    void aControlRecordRoundTrips() {
        MemorySegment rec = MemorySegment.ofArray(new byte[WireFormat.CONTROL_BYTES]);
        WireFormat.writeControl(rec, 40, 7);
        assertEquals(new WireFormat.Control(40, 7), WireFormat.readControl(rec, WireFormat.CONTROL_BYTES));
    }

    @Test
    void controlRecordsOfAnotherSizeOrFormAreRefused() {
        MemorySegment rec = MemorySegment.ofArray(new byte[WireFormat.CONTROL_BYTES]);
        WireFormat.writeControl(rec, 40, 7);
        CommProtocolException size = assertThrows(
                CommProtocolException.class, () -> WireFormat.readControl(rec, WireFormat.CONTROL_BYTES - 1));
        assertTrue(size.getMessage().contains("31 bytes"), size.getMessage());
        MemorySegment message = MemorySegment.ofArray(new byte[WireFormat.CONTROL_BYTES]);
        WireFormat.writeHeader(message, 0, WireFormat.TYPE_MESSAGE, 0, 0);
        CommProtocolException type = assertThrows(
                CommProtocolException.class, () -> WireFormat.readControl(message, WireFormat.CONTROL_BYTES));
        assertTrue(type.getMessage().contains("type 0"), type.getMessage());
        MemorySegment negative = MemorySegment.ofArray(new byte[WireFormat.CONTROL_BYTES]);
        WireFormat.writeControl(negative, -1, 0);
        assertThrows(CommProtocolException.class, () -> WireFormat.readControl(negative, WireFormat.CONTROL_BYTES));
        // A control record on the header tag is no message header.
        assertThrows(CommProtocolException.class, () -> WireFormat.readHeader(rec, 0, 100));
    }
}
