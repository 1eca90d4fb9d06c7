package org.ucx4j.comm;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfig;
import org.ucx4j.testsupport.Requirements;

/** Connect, talk, close many times over each transport: file descriptors and threads come back. */
@Tag("native")
class CommLeakTest {
    static int fds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return (int) s.count();
        }
    }

    static void cycles(String address, int n) {
        CommOptions o =
                CommOptions.builder().config(UcxConfig.builder().build()).build();
        try (CommListener l = Comms.listen(URI.create(address), CommConformanceTest::echo, o)) {
            for (int i = 0; i < n; i++) {
                try (Comm c = Comms.connect(l.address(), o)) {
                    c.write(Message.ofBytes(new byte[100]));
                    c.read(Duration.ofSeconds(10)).close();
                }
            }
        }
    }

    /**
     * The live threads of ucx4j's comms and runtimes, but for the process-wide timer and those in
     * {@code before} (threads other test classes of this JVM left: their leaks are theirs to report).
     */
    static List<String> ucx4jThreads(java.util.Set<Thread> before) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .filter(t -> !before.contains(t))
                .map(Thread::getName)
                .filter(n -> n.startsWith("ucx4j-") && !n.equals("ucx4j-comm-timer"))
                .toList();
    }

    @Test
    void noLeaksAfterManyConnections() throws Exception {
        Requirements.assumeUcx();
        // Surefire runs a module's test classes in one JVM: a runtime another class left open (seen in CI:
        // 'ucx4j-comm-1-progress' still alive 40 s later) is not this test's leak.
        java.util.Set<Thread> before =
                java.util.Set.copyOf(Thread.getAllStackTraces().keySet());
        for (String a : new String[] {"tcp://127.0.0.1:0", "inproc://0", "ucx://127.0.0.1:0"}) {
            cycles(a, 5); // warm-up: UCX's first context maps its shared libraries
            // The baseline once the warm-up's connections and the UCX runtime (it lingers after its last
            // user) have ended their threads.
            await(a + ": the warm-up's ucx4j threads end")
                    .atMost(Duration.ofSeconds(40))
                    .until(() -> ucx4jThreads(before), List::isEmpty); // a timeout names the threads left
            int fds = fds();
            int threads = Thread.activeCount();
            cycles(a, a.startsWith("ucx") ? 100 : 300);
            // A ucx close lingers until the peer disconnects (at most 30 s), then the runtime 2 s more.
            await(a + ": file descriptors and threads come back")
                    .atMost(Duration.ofSeconds(40))
                    .untilAsserted(() -> {
                        assertTrue(fds() <= fds + 4, a + ": file descriptors " + fds + " -> " + fds());
                        assertTrue(
                                Thread.activeCount() <= threads + 4,
                                a + ": threads " + threads + " -> " + Thread.activeCount() + " "
                                        + ucx4jThreads(before));
                    });
            System.out.printf("%s: fds %d -> %d, threads %d -> %d%n", a, fds, fds(), threads, Thread.activeCount());
        }
    }
}
