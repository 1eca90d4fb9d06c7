package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.RunningJvm;

/**
 * {@link TcpBoundsTest}'s measuring JVM: a heap fixed and touched at start ({@code -Xms} = {@code
 * -Xmx}, {@code AlwaysPreTouch}), and native blocks of 64 KiB or more mapped one by one
 * ({@code MALLOC_MMAP_THRESHOLD_}), so that its resident memory moves only with what the comms hold
 * outside the heap. It prints {@code BASE}, then opens N idle tcp:// comms (both ends here) and prints
 * {@code OPEN}, closes them and waits for fds and threads to come back ({@code CLOSED}), and does it all
 * again, waiting for its memory to come back to the first round's level too ({@code AGAIN}); each line: {@code threads=<OS threads> fds=<open fds> rss=<bytes>}.
 */
public final class IdleTcpCommsMain {
    private IdleTcpCommsMain() {}

    static RunningJvm start(int comms) {
        // Every native block of 64 KiB or more gets its own mapping, unmapped when freed: glibc would
        // otherwise keep freed read buffers in its arenas, now and then 20 MiB of them past the test's
        // deadline (CI, session 10), which says nothing about whether the comms freed them.
        return ChildJvm.of(IdleTcpCommsMain.class)
                .env("MALLOC_MMAP_THRESHOLD_", "65536")
                .jvm("-Xms128m", "-Xmx128m", "-XX:+AlwaysPreTouch", "-XX:+UseSerialGC")
                .args(Integer.toString(comms))
                .start();
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        CommOptions o =
                CommOptions.builder().config(UcxConfig.builder().build()).build();
        round(1, o, null); // the JDK's virtual-thread scheduler and socket poller start once
        Stats base = Stats.now();
        System.out.println("BASE " + base);
        round(n, o, "OPEN");
        awaitBack(base, Long.MAX_VALUE);
        Stats closed = Stats.now();
        System.out.println("CLOSED " + closed);
        round(n, o, null);
        // The readers end (and free their buffers) after the sockets close: wait for the memory too, and
        // report what there is at the deadline (the test judges it).
        // AGAIN is the sample that came back (or the last one, at the deadline), not a later one: CI once
        // saw RSS back at the bound, then 1 MiB above it a moment later, when the line was printed.
        System.out.println("AGAIN " + awaitBack(base, closed.rss() + TcpBoundsTest.SECOND_ROUND_SLACK));
        System.exit(0);
    }

    /** Waits until fds, threads and RSS are back within bounds; returns the sample that was, or the last. */
    static Stats awaitBack(Stats base, long rss) throws Exception {
        AtomicReference<Stats> last = new AtomicReference<>();
        try {
            await("file descriptors, threads and memory come back")
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> {
                        Stats s = Stats.now();
                        last.set(s);
                        return s.fds() <= base.fds() + 4 && s.threads() <= base.threads() + 4 && s.rss() <= rss;
                    });
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            System.out.println("NOT BACK " + last.get());
        }
        return last.get();
    }

    /** Opens {@code n} comms to a listener whose handlers wait idle, prints {@code report}, closes them. */
    static void round(int n, CommOptions o, String report) throws Exception {
        AtomicInteger serving = new AtomicInteger();
        List<Comm> comms = new ArrayList<>();
        try (CommListener l = Comms.listen(
                URI.create("tcp://127.0.0.1:0"),
                comm -> {
                    serving.incrementAndGet();
                    try (comm) {
                        while (true) {
                            comm.read().close();
                        }
                    } catch (CommException e) {
                        // the client closed
                    }
                },
                o)) {
            for (int i = 0; i < n; i++) {
                comms.add(Comms.connect(l.address(), o));
            }
            await("every accepted comm reaches its handler")
                    .atMost(Duration.ofSeconds(60))
                    .until(() -> serving.get() == n);
            if (report != null) {
                System.out.println(report + " " + Stats.now());
            }
            comms.forEach(Comm::close);
        }
    }

    /** OS threads, open file descriptors and resident bytes of this process. */
    record Stats(int threads, int fds, long rss) {
        static Stats now() throws Exception {
            int threads = 0;
            long rss = 0;
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Threads:")) {
                    threads = Integer.parseInt(line.replaceAll("\\D", ""));
                } else if (line.startsWith("VmRSS:")) {
                    rss = Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                }
            }
            try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
                return new Stats(threads, (int) s.count(), rss);
            }
        }

        static Stats parse(String line) {
            String[] p = line.trim().split("[ =]");
            return new Stats(Integer.parseInt(p[1]), Integer.parseInt(p[3]), Long.parseLong(p[5]));
        }

        @Override
        public String toString() {
            return "threads=" + threads + " fds=" + fds + " rss=" + rss;
        }
    }
}
