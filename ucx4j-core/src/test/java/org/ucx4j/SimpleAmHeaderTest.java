package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** UCXX's simple active-message header, byte for byte, and what a hostile one gets. */
class SimpleAmHeaderTest {
    private static byte[] hex(String s) {
        return HexFormat.of().parseHex(s.replace(" ", ""));
    }

    @Test
    void encodesUcxxsFourteenBytes() {
        // memory type u32 LE | has-callback u8 | policy u8 | user-header length u64 LE
        assertArrayEquals(hex("00000000 00 00 0000000000000000"), SimpleAmHeader.encode(MemoryKind.HOST));
        assertArrayEquals(hex("01000000 00 01 0000000000000000"), SimpleAmHeader.encode(MemoryKind.CUDA));
        assertEquals(SimpleAmHeader.SIZE, SimpleAmHeader.encode(MemoryKind.HOST).length);
    }

    @Test
    void decodesEveryUcxxVersionsLength() {
        SimpleAmHeader full = SimpleAmHeader.decode(hex("01000000 00 01 0000000000000000"));
        assertEquals(MemoryKind.CUDA, full.memoryKind());
        assertTrue(full.strictMemoryType());
        assertFalse(full.receiverCallback());
        // UCXX before 0.49: memory type and has-callback only; fallback to host is implied.
        SimpleAmHeader old = SimpleAmHeader.decode(hex("01000000 00"));
        assertEquals(MemoryKind.CUDA, old.memoryKind());
        assertFalse(old.strictMemoryType());
        assertEquals(MemoryKind.HOST, SimpleAmHeader.decode(hex("00000000")).memoryKind());
        // A user header is read past, a receiver callback announced.
        assertEquals(
                3,
                SimpleAmHeader.decode(hex("00000000 00 00 0300000000000000 aabbcc"))
                        .userHeaderLength());
        assertTrue(SimpleAmHeader.decode(hex("00000000 01 6f776e6572000000 0700000000000000 00"))
                .receiverCallback());
        // ROCm (3) and the like: no kind in ucx4j.
        assertNull(SimpleAmHeader.decode(hex("03000000 00 00 0000000000000000")).memoryKind());
    }

    @Test
    void refusesHostileHeadersWithTheReason() {
        assertTrue(refused("").contains("at least 4"));
        assertTrue(refused("0000").contains("at least 4"));
        assertTrue(refused("00000000 02").contains("has-callback byte is 2"));
        assertTrue(refused("00000000 01 0000").contains("receiver callback"));
        assertTrue(refused("00000000 00 07").contains("policy 7"));
        assertTrue(refused("00000000 00 00 ffffffffffffffff").contains("18446744073709551615"));
        assertTrue(refused("00000000 00 00 0500000000000000 aabb").contains("user header of 5 bytes where 2"));
    }

    private static String refused(String header) {
        return assertThrows(IllegalArgumentException.class, () -> SimpleAmHeader.decode(hex(header)))
                .getMessage();
    }
}
