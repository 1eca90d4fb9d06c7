package org.ucx4j.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.UcxConfig;
import org.ucx4j.testsupport.Requirements;

/**
 * Received messages dropped without {@code close()} are reclaimed in bounded memory, with a heap that
 * stays nearly empty (so no heap pressure ever runs the cleaner by itself); messages kept reachable past
 * {@code max-unclosed-bytes} fail the reader with an error that names the leak.
 */
@Tag("native")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class UnclosedMessagesTest {
    static final long MIB = 1 << 20;
    static final long BUDGET = 64 * MIB;

    static CommOptions options(Duration connectTimeout) {
        return CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.MAX_UNCLOSED_BYTES, BUDGET)
                        .build())
                .connectTimeout(connectTimeout)
                .build();
    }

    static long rss() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }

    /** Writes {@code count} messages of 1 MiB (one buffer, written again and again), then closes. */
    static CommHandler writer(int count) {
        return writer(count, MIB);
    }

    /** Writes {@code count} messages of {@code size} bytes (one buffer, written again and again), then closes. */
    static CommHandler writer(int count, long size) {
        return comm -> {
            try (comm;
                    Arena arena = Arena.ofShared()) {
                MemorySegment payload = arena.allocate(size);
                for (int i = 0; i < count; i++) {
                    comm.write(Message.of(Frame.host(payload)));
                }
            } catch (CommException e) {
                // the reader's side failed or closed: the test reports it
            }
        };
    }

    void assumeTransport(String address) {
        if (address.startsWith("ucx")) {
            Requirements.assumeUcx();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0"})
    void tenThousandMessagesOf1MiBNeverClosedKeepTheProcessBounded(String address) throws Exception {
        assumeTransport(address);
        int count = 10_000;
        try (CommListener l = Comms.listen(URI.create(address), writer(count), options(Duration.ofSeconds(60)));
                Comm c = Comms.connect(l.address(), options(Duration.ofSeconds(60)))) {
            // A warm-up: the transport's threads, UCX's pools and the first arenas, then the baseline.
            for (int i = 0; i < 100; i++) {
                c.read(Duration.ofSeconds(60)).close();
            }
            long start = rss();
            long peak = start;
            for (int i = 100; i < count; i++) {
                c.read(Duration.ofSeconds(60)); // dropped without close(), on purpose
                if (i % 250 == 0) {
                    peak = Math.max(peak, rss());
                }
            }
            peak = Math.max(peak, rss());
            long grew = peak - start;
            System.out.printf(
                    "%s: %d x 1 MiB read without close: RSS %d MiB -> peak %d MiB (+%d MiB; budget %d MiB)%n",
                    address, count, start / MIB, peak / MIB, grew / MIB, BUDGET / MIB);
            // The budget, plus what one message per comm in flight and the allocator's slack may add; far
            // below the 10 GiB read (before, RSS grew by about as much as was read).
            assertTrue(grew < 4 * BUDGET + 128 * MIB, address + ": RSS grew by " + grew / MIB + " MiB");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0"})
    void messagesKeptPastTheBudgetFailTheReaderWithAnErrorNamingTheLeak(String address) throws Exception {
        keptPastTheBudget(address, 1000, MIB);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0"})
    void smallMessagesKeptPastTheBudgetFailTheReaderWithAnErrorNamingTheLeak(String address) throws Exception {
        // 4 KiB messages travel inline on ucx://: no frame is asked for, so it is the grants that stop.
        keptPastTheBudget(address, 40_000, 4096);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx://127.0.0.1:0", "tcp://127.0.0.1:0"})
    void aReaderThatClosesEveryMessageIsNeverStoppedAtTheLeastBudget(String address) throws Exception {
        // 1 MiB, the least max-unclosed-bytes, is the size of the slab small messages share: a slab whose
        // messages were all closed counted in full, stopped the reader after its first message, and after
        // the connect timeout failed it with an error blaming a leak it did not have.
        assumeTransport(address);
        CommOptions least = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.MAX_UNCLOSED_BYTES, MIB)
                        .build())
                .connectTimeout(Duration.ofSeconds(2))
                .build();
        int count = 3000; // three slabs' worth of 1 KiB messages
        try (CommListener l = Comms.listen(URI.create(address), writer(count, 1024), least);
                Comm c = Comms.connect(l.address(), least)) {
            for (int i = 0; i < count; i++) {
                try (Message m = c.read(Duration.ofSeconds(60))) {
                    assertEquals(1024, m.byteSize(), "message " + i);
                }
            }
        }
    }

    /**
     * The peer writes {@code count} messages of {@code size} bytes; this side reads and keeps them all: the
     * read fails with the error naming the leak once they hold about the budget, and what was kept is good.
     */
    private void keptPastTheBudget(String address, int count, long size) throws Exception {
        assumeTransport(address);
        Duration patience = Duration.ofSeconds(2);
        List<Message> kept = new ArrayList<>();
        try (CommListener l = Comms.listen(URI.create(address), writer(count, size), options(patience));
                Comm c = Comms.connect(l.address(), options(patience))) {
            CommException e = assertThrows(CommException.class, () -> {
                while (true) {
                    kept.add(c.read(Duration.ofSeconds(60)));
                }
            });
            System.out.printf(
                    "%s: after %d messages of %d bytes kept: %s%n", address, kept.size(), size, e.getMessage());
            assertTrue(e.getMessage().contains("max-unclosed-bytes"), e.getMessage());
            assertTrue(e.getMessage().contains("close every Message"), e.getMessage());
            assertTrue(kept.size() * size >= BUDGET / 2, "kept " + kept.size());
            assertTrue(kept.size() * size <= 2 * BUDGET + 256 * MIB, "kept " + kept.size());
            // What was kept is still good: the comm failed, the messages did not.
            assertEquals(size, kept.get(kept.size() - 1).frame(0).size());
        } finally {
            kept.forEach(Message::close);
        }
    }
}
