package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.ucx4j.testing.EchoProtocol;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/** Many clients on one listener, and many threads (platform and virtual) on one worker. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("native")
class ConcurrencyTest {
    @Test
    void twentyConcurrentClientsAndOneThatConnectsLate() throws Exception {
        Requirements.assumeUcx();
        try (RunningJvm server = PeerMain.start(Map.of(), "echo-server")) {
            int port = Integer.parseInt(server.awaitLine("PORT", Duration.ofSeconds(30)));
            try (RunningJvm twenty = PeerMain.start(Map.of(), "clients", "20", String.valueOf(port), "1000")) {
                assertEquals("20/20", twenty.awaitLine("DONE", Duration.ofSeconds(120)));
                assertEquals(0, twenty.waitFor(Duration.ofSeconds(30)));
            }
            // Late: after the twenty have finished and gone.
            try (RunningJvm late = PeerMain.start(Map.of(), "clients", "1", String.valueOf(port), "11000")) {
                assertEquals("1/1", late.awaitLine("DONE", Duration.ofSeconds(120)));
                assertEquals(0, late.waitFor(Duration.ofSeconds(30)));
            }
            assertTrue(server.process().isAlive(), "the server survived its clients leaving");
        }
    }

    /**
     * With the default progress mode and in caller mode, where the threads in blocking calls drive the
     * worker themselves, taking turns with its lock.
     */
    @ParameterizedTest
    @EnumSource(names = {"THREAD_BLOCKING", "CALLER"})
    void manyPlatformAndVirtualThreadsShareOneWorker(ProgressMode mode) throws Exception {
        Requirements.assumeUcx();
        try (RunningJvm server = PeerMain.start(Map.of(), "echo-server");
                UcxContext ctx = UcxContext.create();
                UcxWorker worker =
                        ctx.newWorker(WorkerOptions.builder().progressMode(mode).build())) {
            int port = Integer.parseInt(server.awaitLine("PORT", Duration.ofSeconds(30)));
            UcxEndpoint ep = worker.connect("127.0.0.1", port);
            int id = 7;
            EchoProtocol.hello(ep, id);
            int platform = 8;
            int virtual = 200;
            int rounds = 10;
            AtomicInteger seq = new AtomicInteger();
            AtomicInteger ok = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            CountDownLatch done = new CountDownLatch(platform + virtual);
            Runnable body = () -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment out = arena.allocate(256);
                    MemorySegment in = arena.allocate(256);
                    for (int r = 0; r < rounds; r++) {
                        int s = seq.incrementAndGet();
                        out.fill((byte) s);
                        long n = EchoProtocol.echoTag(worker, ep, out, in, EchoProtocol.tag(id, s));
                        if (n != 256 || in.mismatch(out) != -1) {
                            throw new AssertionError("wrong echo for sequence " + s);
                        }
                        ok.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failures.add(t);
                } finally {
                    done.countDown();
                }
            };
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < platform; i++) {
                threads.add(Thread.ofPlatform().start(body));
            }
            for (int i = 0; i < virtual; i++) {
                threads.add(Thread.ofVirtual().start(body));
            }
            assertTrue(done.await(150, TimeUnit.SECONDS), "threads did not finish; ok=" + ok.get());
            assertTrue(failures.isEmpty(), "failures: " + failures);
            assertEquals((platform + virtual) * rounds, ok.get());
        }
    }
}
