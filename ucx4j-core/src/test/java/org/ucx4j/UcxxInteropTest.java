package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Writer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.Requirements;

/**
 * ucx4j against the real UCXX (Python, {@code pip install ucxx-cu13}, run as a child process from
 * {@code ucxx_peer.py}): UCXX's simple active messages ({@code am_send}/{@code am_recv}) and tag messages,
 * both directions, over a connection each side starts, and IP-less over worker addresses.
 *
 * <p>Tagged {@code ucxx}, excluded from the default build and run by {@code bin/ucx4j-test-ucxx}, which
 * installs {@code ucxx-cu13} into {@code build-cache/ucxx-venv} and points this JVM at the same libucp
 * (UCX 1.21) that the Python peer uses: UCX's wire protocol is not compatible across releases (measured:
 * the JVM on UCX 1.13 or 1.22 cannot connect through a listener to UCXX on 1.21; IP-less works from 1.13
 * and hangs from 1.22), so matching versions test ucx4j's side, not UCX's. Python with UCXX is found
 * through {@code UCX4J_UCXX_PYTHON}, else {@code build-cache/ucxx-venv/bin/python}; without it the tests
 * skip, and fail when {@code UCX4J_REQUIRE_UCXX=1} (CI).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("ucxx")
class UcxxInteropTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final HexFormat HEX = HexFormat.of();
    private static Path python;
    private static UcxContext ctx;
    private static UcxWorker worker;

    @TempDir
    static Path dir;

    @BeforeAll
    static void findUcxx() throws Exception {
        Requirements.assumeUcx();
        String configured = System.getenv("UCX4J_UCXX_PYTHON");
        python = configured != null && !configured.isBlank()
                ? Path.of(configured)
                : Path.of("..", "build-cache", "ucxx-venv", "bin", "python")
                        .toAbsolutePath()
                        .normalize();
        String why = ucxxMissing(python);
        Requirements.assume("a Python with UCXX (bin/ucx4j-test-ucxx)", why == null, why, Requirements.REQUIRE_UCXX);
        ctx = UcxContext.create();
        worker = ctx.newWorker();
    }

    @AfterAll
    static void close() {
        if (ctx != null) {
            ctx.close();
        }
    }

    private static String ucxxMissing(Path python) throws Exception {
        if (!Files.isExecutable(python)) {
            return python + " does not exist (set UCX4J_UCXX_PYTHON or run bin/ucx4j-test-ucxx)";
        }
        Process p = new ProcessBuilder(python.toString(), "-c", "import ucxx._lib.libucxx")
                .redirectErrorStream(true)
                .start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            return python + " cannot import UCXX: " + output.strip();
        }
        return null;
    }

    @Test
    void ucx4jConnectsToUcxxListener() throws Exception {
        try (UcxxPeer peer = UcxxPeer.start("listen")) {
            int port = Integer.parseInt(peer.expect("PORT"));
            UcxEndpoint ep = worker.connect("127.0.0.1", port);
            peer.expect("READY");
            exchange(ep, peer);
        }
    }

    @Test
    void ucxxConnectsToUcx4jListener() throws Exception {
        CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
        try (UcxListener listener = worker.listen(0, accepted::complete);
                UcxxPeer peer = UcxxPeer.start("connect", "127.0.0.1", Integer.toString(listener.port()))) {
            peer.expect("READY");
            exchange(accepted.get(60, TimeUnit.SECONDS), peer);
        }
    }

    @Test
    void ipLessBothWays() throws Exception {
        try (UcxxPeer peer = UcxxPeer.start("address")) {
            WorkerAddress theirs = WorkerAddress.of(HEX.parseHex(peer.expect("ADDRESS")));
            peer.send("ADDRESS " + HEX.formatHex(worker.address().bytes()));
            UcxEndpoint ep = worker.connect(theirs); // ucx4j -> UCXX by worker address
            peer.expect("READY"); // and UCXX -> ucx4j by ours
            exchange(ep, peer);
        }
    }

    /** Simple active messages and tag messages, each way, checked byte for byte on the other side. */
    private static void exchange(UcxEndpoint ep, UcxxPeer peer) throws Exception {
        byte[] toUcxx = bytes("ucx4j -> UCXX am_recv", 300);
        ep.amSend(MemorySegment.ofArray(toUcxx));
        peer.send("AM_RECV");
        assertArrayEquals(toUcxx, HEX.parseHex(peer.expect("AM")), "UCXX's am_recv got ucx4j's amSend");

        byte[] fromUcxx = bytes("UCXX am_send -> ucx4j", 200_000); // past the rendezvous threshold
        peer.send("AM_SEND " + HEX.formatHex(fromUcxx));
        MemorySegment got = worker.await(ep.amRecvAsync(), WAIT);
        peer.expect("SENT");
        assertArrayEquals(fromUcxx, got.toArray(ValueLayout.JAVA_BYTE), "ucx4j's amRecv got UCXX's am_send");

        byte[] tagged = bytes("ucx4j tag -> UCXX", 64);
        peer.send("TAG_RECV 17 " + tagged.length);
        ep.tagSend(tagged, 17);
        assertArrayEquals(tagged, HEX.parseHex(peer.expect("TAG")), "UCXX's tag_recv got ucx4j's tagSend");

        byte[] back = bytes("UCXX tag -> ucx4j", 100);
        byte[] into = new byte[back.length];
        UcxFuture<TagInfo> received = worker.tagRecvAsync(into, 18, -1L, ep);
        peer.send("TAG_SEND 18 " + HEX.formatHex(back));
        assertEquals(back.length, worker.await(received, WAIT).length());
        peer.expect("SENT");
        assertArrayEquals(back, into, "ucx4j's tagRecv got UCXX's tag_send");
    }

    private static byte[] bytes(String text, int size) {
        byte[] b = new byte[size];
        byte[] t = text.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < size; i++) {
            b[i] = i < t.length ? t[i] : (byte) (i * 7);
        }
        return b;
    }

    /** The Python UCXX peer: a child process spoken to one line at a time. */
    private static final class UcxxPeer implements AutoCloseable {
        private final Process process;
        private final Writer stdin;
        private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final Path stderr;

        private UcxxPeer(Process process, Path stderr) {
            this.process = process;
            this.stderr = stderr;
            this.stdin = process.outputWriter(StandardCharsets.UTF_8);
            Thread.ofPlatform().daemon().name("ucxx-peer-stdout").start(() -> pump(process.getInputStream()));
        }

        static UcxxPeer start(String... args) throws IOException {
            Path script = dir.resolve("ucxx_peer.py");
            if (!Files.exists(script)) {
                try (InputStream in = UcxxInteropTest.class.getResourceAsStream("ucxx_peer.py")) {
                    assertNotNull(in, "ucxx_peer.py on the test class path");
                    Files.copy(in, script);
                }
            }
            List<String> command = new ArrayList<>(List.of(python.toString(), script.toString()));
            command.addAll(List.of(args));
            Path err = Files.createTempFile(dir, "ucxx-peer", ".err");
            ProcessBuilder pb = new ProcessBuilder(command).redirectError(err.toFile());
            // The peer runs on its wheel's UCX, whatever this JVM was pointed at.
            pb.environment().remove("UCX4J_UCX_LIBRARY");
            pb.environment().put("UCX_WARN_UNUSED_ENV_VARS", "n");
            return new UcxxPeer(pb.start(), err);
        }

        private void pump(InputStream in) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                }
            } catch (IOException e) {
                lines.add("EOF " + e);
            }
        }

        void send(String line) throws IOException {
            stdin.write(line + "\n");
            stdin.flush();
        }

        /** The rest of the next line that starts with {@code keyword} (UCX's own log lines are skipped). */
        String expect(String keyword) throws Exception {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                String line = lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (line == null) {
                    throw new AssertionError("the UCXX peer sent no '" + keyword + "' within " + WAIT + " (alive: "
                            + process.isAlive() + "); its stderr:\n" + Files.readString(stderr));
                }
                if (line.equals(keyword) || line.startsWith(keyword + " ")) {
                    return line.substring(keyword.length()).strip();
                }
            }
        }

        @Override
        public void close() throws Exception {
            try {
                stdin.close();
            } catch (IOException ignored) {
                // Already gone.
            }
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
