package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ByteSizeTest {
    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "1GB|1000000000",
                "1000.00 MB|1000000000",
                "1.5 GB|1500000000",
                "1g|1000000000",
                "1G|1000000000",
                "512MiB|536870912",
                "512 mib|536870912",
                "1Gi|1073741824",
                "2 KiB|2048",
                "4096|4096",
                "10 B|10",
                "1kB|1000",
                "1k|1000",
                "1e9|1000000000",
                "1e99|-1",
                "1e99999999|-1", // refused at once (an exponent of more than two digits is no size)
                "0|0",
                "1.0001 kB|1000",
                "64GiB|68719476736",
                "8 EB|-1"
            })
    void parses(String text, long expected) {
        if (expected < 0) {
            assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(text));
        } else {
            assertEquals(expected, ByteSize.parse(text));
        }
    }

    @Test
    void siUnitsArePowersOfTenAndIecUnitsPowersOfTwo() {
        assertEquals(64_000_000L, ByteSize.parse("64MB"));
        assertEquals(64_000L, ByteSize.parse("64KB"));
        assertEquals(64_000L, ByteSize.parse("64kB"));
        assertEquals(67_108_864L, ByteSize.parse("64Mi"));
        assertEquals(67_108_864L, ByteSize.parse("64MiB"));
        assertEquals(1L << 40, ByteSize.parse("1TiB"));
        assertEquals(1_000_000_000_000L, ByteSize.parse("1TB"));
    }

    @Test
    void refuses() {
        for (String bad : new String[] {"", "GB", "-1GB", "1.5", "1 GX", "lots", "99999999 PiB"}) {
            assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(bad), bad);
        }
    }

    @Test
    void formats() {
        assertEquals("1 GB (1000000000 bytes)", ByteSize.format(1_000_000_000L));
        assertEquals("1 GiB (1073741824 bytes)", ByteSize.format(1L << 30));
        assertEquals("1234 bytes", ByteSize.format(1234));
        assertEquals("0 bytes", ByteSize.format(0));
        assertEquals("1 byte", ByteSize.format(1));
    }
}
