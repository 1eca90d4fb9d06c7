package org.ucx4j.internal.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {
    @Test
    void parses() {
        assertEquals(Duration.ofSeconds(5), Durations.parse("5s"));
        assertEquals(Duration.ofMillis(250), Durations.parse("250ms"));
        assertEquals(Duration.ofMinutes(1), Durations.parse("1m"));
        assertEquals(Duration.ofMinutes(2), Durations.parse("2 min"));
        assertEquals(Duration.ofMillis(2500), Durations.parse("2.5s"));
        assertEquals(Duration.ofSeconds(30), Durations.parse("30"));
        assertEquals(Duration.ofMillis(500), Durations.parse("0.5"));
        assertEquals(Duration.ofHours(1), Durations.parse("1h"));
        assertEquals(Duration.ofSeconds(5), Durations.parse("PT5S"));
        assertEquals(Duration.ofNanos(1500), Durations.parse("1.5us"));
    }

    @Test
    void refuses() {
        for (String bad : new String[] {"", "s", "-1s", "5 parsecs", "PTXS"}) {
            assertThrows(IllegalArgumentException.class, () -> Durations.parse(bad), bad);
        }
    }

    @Test
    void formats() {
        assertEquals("5s", Durations.format(Duration.ofSeconds(5)));
        assertEquals("250ms", Durations.format(Duration.ofMillis(250)));
        assertEquals("2500ms", Durations.format(Duration.ofMillis(2500)));
        assertEquals("2m", Durations.format(Duration.ofMinutes(2)));
        assertEquals("0s", Durations.format(Duration.ZERO));
    }
}
