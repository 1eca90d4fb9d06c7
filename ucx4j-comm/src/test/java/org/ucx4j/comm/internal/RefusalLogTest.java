package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** {@link RefusalLog}: a few lines per window, then counts by kind in one summary line. */
class RefusalLogTest {
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final AtomicLong now = new AtomicLong(1_000);

    @Test
    void aFloodGivesTheFirstFewLinesThenOneSummaryWithCountsByKind() {
        RefusalLog log = new RefusalLog(lines::add, "ucx://h:1", Duration.ofSeconds(10), 5, now::get);
        for (int i = 0; i < 100; i++) {
            log.refused(
                    i % 4 == 0 ? "max-pending-handshakes" : "handshake failed", "refused {}: {}", "peer" + i, "why");
        }
        assertEquals(5, lines.size(), lines.toString());
        assertEquals("ucx://h:1: refused peer0: why", lines.get(0));
        now.addAndGet(Duration.ofSeconds(10).toNanos());
        log.flush();
        assertEquals(6, lines.size(), lines.toString());
        // Of the 95 not logged one by one: i = 5..99, of which 23 are multiples of 4 (8, 12, ..., 96).
        assertEquals(
                "ucx://h:1: 95 more refusals in the last 10 s not logged one by one (at most 5 a window):"
                        + " handshake failed 72, max-pending-handshakes 23",
                lines.get(5));
        // A new window logs again, one by one.
        log.refused("handshake failed", "refused {}", "again");
        assertEquals("ucx://h:1: refused again", lines.get(6));
        // Nothing suppressed in it: no summary at its end.
        now.addAndGet(Duration.ofSeconds(10).toNanos());
        log.flush();
        assertEquals(7, lines.size(), lines.toString());
    }

    @Test
    void theSummaryComesByItselfWhenTheFloodStops() {
        RefusalLog log = new RefusalLog(lines::add, "tcp://h:2", Duration.ofMillis(300), 2, System::nanoTime);
        for (int i = 0; i < 10; i++) {
            log.refused("handshake failed", "refused {}", i);
        }
        await("the summary line").atMost(Duration.ofSeconds(30)).until(() -> lines.stream()
                .anyMatch(l -> l.contains("more refusals")));
        String summary = lines.stream()
                .filter(l -> l.contains("more refusals"))
                .findFirst()
                .orElseThrow();
        assertTrue(summary.startsWith("tcp://h:2: 8 more refusals"), summary);
        assertTrue(summary.endsWith("handshake failed 8"), summary);
    }
}
