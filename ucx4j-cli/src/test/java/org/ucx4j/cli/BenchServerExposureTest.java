package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.cli.CliProcess.number;
import static org.ucx4j.cli.CliProcess.string;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/**
 * {@code ucx4j bench --server} exposed to peers that are not its client, written here by hand: 16 bytes
 * of HTTP, of zeros and random (the zeros aborted the server on UCX 1.13 when it listened with UCX's
 * listener: an assertion in {@code uct_tcp_sockcm_ep_recv}), a record claiming a 2 GiB
 * worker address, a peer that hangs up half-way, silent connections. Each is closed, the server process
 * lives on, and the real client then connects (while the silent ones are still open) and benchmarks as
 * usual.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class BenchServerExposureTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    /** Sends {@code bytes} and reads until the server closes the connection; returns how much came back. */
    private static int sendAndReadToEnd(int port, byte[] bytes) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port));
            s.setSoTimeout((int) DEADLINE.toMillis());
            s.getOutputStream().write(bytes);
            s.getOutputStream().flush();
            s.shutdownOutput();
            InputStream in = s.getInputStream();
            int n = 0;
            try {
                while (in.read() >= 0) {
                    n++;
                }
            } catch (IOException reset) {
                // reset by the server: closed all the same
            }
            return n;
        }
    }

    @Test
    void strangersAreClosedAndTheClientIsThenServed() throws Exception {
        try (RunningJvm server = CliProcess.command(dir, "bench", "--server", "--op", "tag")
                .jvm("-XX:TieredStopAtLevel=1")
                .start()) {
            int port = Integer.parseInt(server.awaitLine("PORT ", DEADLINE));

            byte[] http = "GET / HTTP/1.0\r\n".getBytes(StandardCharsets.US_ASCII);
            assertEquals(16, http.length);
            assertEquals(0, sendAndReadToEnd(port, http), "the server answered garbage");
            // What aborted the old server (UCX's listener) on UCX 1.13, in uct_tcp_sockcm_ep_recv.
            assertEquals(0, sendAndReadToEnd(port, new byte[16]), "the server answered 16 zero bytes");
            byte[] random = new byte[16];
            new java.security.SecureRandom().nextBytes(random);
            assertEquals(0, sendAndReadToEnd(port, random), "the server answered 16 random bytes");

            java.io.ByteArrayOutputStream huge = new java.io.ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(huge);
            out.write("UCX4JBW1".getBytes(StandardCharsets.US_ASCII));
            out.writeInt(Integer.MAX_VALUE);
            assertEquals(0, sendAndReadToEnd(port, huge.toByteArray()), "the server answered a 2 GiB claim");

            assertEquals(0, sendAndReadToEnd(port, "UCX4J".getBytes(StandardCharsets.US_ASCII)));
            assertTrue(server.process().isAlive(), "the bench server died of a stranger's bytes");

            // Two silent connections, held open while the client comes: read side by side with the
            // client's, they cannot keep it waiting (one after the other, 2 x 10 s would exceed the
            // client's own 10 s).
            Socket silent1 = new Socket("127.0.0.1", port);
            Socket silent2 = new Socket("127.0.0.1", port);
            JsonNode result = CliProcess.benchJson(
                    dir,
                    "--connect",
                    "127.0.0.1:" + port,
                    "--op",
                    "tag",
                    "--size",
                    "8",
                    "--iters",
                    "100",
                    "--warmup-time",
                    "0");
            silent1.close();
            silent2.close();
            assertEquals("tag", string(result, "op"));
            assertTrue(number(result, "latency_us_p50") > 0, result.toString());
            assertEquals(0, server.waitFor(DEADLINE), "the server did not exit cleanly after its client");
        }
    }
}
