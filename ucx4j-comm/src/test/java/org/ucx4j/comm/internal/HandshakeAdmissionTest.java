package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.comm.spi.Transport;
import org.ucx4j.testsupport.Requirements;

/**
 * A listener's handshake slots and refusal log against raw hostile peers, on {@code tcp://} and
 * {@code ucx://}: one source address cannot take every slot ({@code max-pending-handshakes-per-source}),
 * {@code tcp://} has a total bound too, and a flood of bad handshakes gives a few log lines and a
 * summary with the count, not a line each.
 */
@Tag("native")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HandshakeAdmissionTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);
    /** A second loopback address: Linux routes all of 127/8 to lo, so a socket can bind it as its source. */
    private static final String OTHER_SOURCE = "127.0.0.2";

    private final List<AutoCloseable> toClose = new ArrayList<>();
    private Transport transport;

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (transport != null) {
            transport.close();
        }
    }

    /** A listener and its door (slots and refusals). */
    private record Listening(CommListener listener, HandshakeGate gate) {
        long refusals() {
            return gate.refusals();
        }

        String lastRefusal() {
            return gate.lastRefusal();
        }

        HandshakeSlots slots() {
            return gate.slots();
        }
    }

    /** A listener of the scheme whose comms echo. */
    private Listening listen(String scheme, CommOptions options) {
        if (scheme.equals("ucx")) {
            Requirements.assumeUcx();
        }
        transport = scheme.equals("ucx") ? new UcxTransport() : new TcpTransport();
        CommListener l = transport.listen(
                URI.create(scheme + "://127.0.0.1:0"),
                comm -> {
                    try (comm) {
                        while (true) {
                            try (Message m = comm.read()) {
                                comm.write(m);
                            }
                        }
                    } catch (RuntimeException closed) {
                        // the client went away
                    }
                },
                options);
        toClose.add(l);
        HandshakeGate gate = l instanceof UcxTransport.Listener u ? u.gate() : ((TcpTransport.Listener) l).gate();
        return new Listening(l, gate);
    }

    private static CommOptions options(UcxConfig.Builder config, Duration connectTimeout) {
        return CommOptions.builder()
                .config(config.build())
                .connectTimeout(connectTimeout)
                .build();
    }

    private static SocketChannel socketFrom(String source, URI listener) throws Exception {
        SocketChannel s = SocketChannel.open();
        s.bind(new InetSocketAddress(source, 0));
        s.connect(new InetSocketAddress("127.0.0.1", listener.getPort()));
        return s;
    }

    private void stillServes(URI address, CommOptions options) throws Exception {
        try (Comm c = transport.connectAsync(address, options).get(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            byte[] sent = "still serving".getBytes(StandardCharsets.UTF_8);
            c.write(Message.ofBytes(sent));
            try (Message m = c.read(DEADLINE)) {
                assertArrayEquals(sent, m.frame(0).toByteArray());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void oneSourceCannotTakeEverySlotAndOthersAreStillServed(String scheme) throws Exception {
        // Eviction would let the source's fourth take its own oldest slot after this age: a minute, so that
        // this test sees the per-source bound refuse (the next tests see eviction).
        CommOptions o = options(
                UcxConfig.builder()
                        .set(CommKeys.MAX_PENDING_HANDSHAKES, 8)
                        .set(CommKeys.MAX_PENDING_HANDSHAKES_PER_SOURCE, 3)
                        .set(CommKeys.HANDSHAKE_EVICTION_AGE, Duration.ofMinutes(1)),
                Duration.ofSeconds(60));
        Listening l = listen(scheme, o);
        List<SocketChannel> silent = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            silent.add(socketFrom(OTHER_SOURCE, l.listener().address()));
        }
        long started = System.nanoTime();
        try (SocketChannel fourth = socketFrom(OTHER_SOURCE, l.listener().address())) {
            assertEquals(0, UcxListenerExposureTest.readToEnd(fourth).length, "the fourth got an answer");
        }
        // Closed long before the 60 s handshake deadline: refused for the per-source bound.
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(30));
        await("the refusal counted").atMost(DEADLINE).until(() -> l.refusals() == 1);
        assertEquals("3 handshakes under way from 127.0.0.2 (max-pending-handshakes-per-source)", l.lastRefusal());
        // Another source gets a slot while the first holds its three.
        stillServes(l.listener().address(), o);
        for (SocketChannel s : silent) {
            s.close();
        }
        // Their slots come back (their handshakes fail at the hang-up), and the source gets its share again.
        await("the slots back").atMost(DEADLINE).until(() -> l.slots().taken() == 0);
        for (int i = 0; i < 3; i++) {
            toClose.add(socketFrom(OTHER_SOURCE, l.listener().address()));
        }
        await("three slots for the source again")
                .atMost(DEADLINE)
                .until(() -> l.slots().taken() == 3);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void connectionsBeyondTheTotalAreClosedAtOnce(String scheme) throws Exception {
        // tcp:// had no bound at all: any number of silent connections each held a thread and a socket
        // until connect-timeout.
        // With eviction off: handshake-eviction-age 0 (the next test has it on).
        CommOptions o = fourSlots(4, Duration.ZERO);
        Listening l = listen(scheme, o);
        // From four sources, so that the total is what refuses the fifth.
        List<SocketChannel> silent = silentFromFourSources(10, l.listener().address());
        try (SocketChannel fifth = socketFrom("127.0.0.20", l.listener().address())) {
            assertEquals(0, UcxListenerExposureTest.readToEnd(fifth).length);
        }
        await("the refusal counted").atMost(DEADLINE).until(() -> l.refusals() == 1);
        assertEquals("4 handshakes under way (max-pending-handshakes)", l.lastRefusal());
        for (SocketChannel s : silent) {
            s.close();
        }
        await("served once the silent ones are gone")
                .atMost(DEADLINE)
                .ignoreExceptions()
                .untilAsserted(() -> stillServes(l.listener().address(), o));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void silentConnectionsFromManySourcesGiveWayToAnHonestClient(String scheme) throws Exception {
        // Every slot taken by silent connections from four sources (the per-source bound cannot stop that):
        // the honest client takes the oldest one's slot instead of waiting for connect-timeout (60 s).
        CommOptions o = fourSlots(1, Duration.ofMillis(1));
        Listening l = listen(scheme, o);
        List<SocketChannel> silent = silentFromFourSources(30, l.listener().address());
        anHonestClientTakesTheSlotOfOneOf(silent, l, o);
        assertEquals(1, closedByPeer(silent));
        for (SocketChannel s : silent) {
            s.close();
        }
        await("the slots back").atMost(DEADLINE).until(() -> l.slots().taken() == 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void silentConnectionsFromTheClientsOwnSourceGiveWayToIt(String scheme) throws Exception {
        // Every local client is one source (127.0.0.1). One local process holding that source's share with
        // silent sockets (reopened as they time out) kept every other local client out: the per-source bound
        // refused them at once and was never lifted. Now a newcomer takes its source's oldest slot once that
        // is handshake-eviction-age old, as beyond the total.
        CommOptions o = fourSlots(3, Duration.ofMillis(1));
        Listening l = listen(scheme, o);
        List<SocketChannel> silent = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            silent.add(socketFrom("127.0.0.1", l.listener().address()));
        }
        anHonestClientTakesTheSlotOfOneOf(silent, l, o);
    }

    /**
     * With every one of {@code silent} holding a handshake slot: an honest client is served well before
     * connect-timeout, because one silent connection was closed to make room (its handshake failed as cut
     * short).
     */
    private void anHonestClientTakesTheSlotOfOneOf(List<SocketChannel> silent, Listening l, CommOptions o)
            throws Exception {
        for (SocketChannel s : silent) {
            s.configureBlocking(false);
            toClose.add(s);
        }
        await(silent.size() + " handshakes under way")
                .atMost(DEADLINE)
                .until(() -> l.slots().taken() == silent.size());
        long started = System.nanoTime();
        stillServes(l.listener().address(), o);
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(30), "served long after it came");
        await("a silent connection closed").atMost(DEADLINE).until(() -> closedByPeer(silent) == 1);
        await("the cut-short handshake counted").atMost(DEADLINE).until(() -> l.refusals() == 1);
        assertTrue(l.lastRefusal().contains("was cut short"), l.lastRefusal());
    }

    /** Four handshake slots, {@code perSource} of them for one source; 60 s to connect. */
    private static CommOptions fourSlots(int perSource, Duration evictionAge) {
        return options(
                UcxConfig.builder()
                        .set(CommKeys.MAX_PENDING_HANDSHAKES, 4)
                        .set(CommKeys.MAX_PENDING_HANDSHAKES_PER_SOURCE, perSource)
                        .set(CommKeys.HANDSHAKE_EVICTION_AGE, evictionAge),
                Duration.ofSeconds(60));
    }

    /** Four connections that never send, from 127.0.0.{@code firstHost} and the three addresses after it. */
    private static List<SocketChannel> silentFromFourSources(int firstHost, URI listener) throws Exception {
        List<SocketChannel> silent = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            silent.add(socketFrom("127.0.0." + (firstHost + i), listener));
        }
        return silent;
    }

    /** How many of the non-blocking sockets the listener has closed (a read sees the end). */
    private static int closedByPeer(List<SocketChannel> sockets) throws Exception {
        int n = 0;
        ByteBuffer b = ByteBuffer.allocate(64);
        for (SocketChannel s : sockets) {
            b.clear();
            try {
                if (s.read(b) < 0) {
                    n++;
                }
            } catch (java.io.IOException reset) {
                n++;
            }
        }
        return n;
    }

    private static final Pattern SUMMARY = Pattern.compile(": (\\d+) more refusals? in the last");

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx"})
    void aFloodOfBadHandshakesIsLoggedAsAFewLinesAndASummary(String scheme) throws Exception {
        int flood = 60;
        CommOptions o = options(UcxConfig.builder(), Duration.ofSeconds(10));
        PrintStream stderr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        // slf4j-simple writes to whatever System.err is at each line.
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            Listening l = listen(scheme, o);
            String uri = l.listener().address().toString();
            long started = System.nanoTime();
            byte[] http = "GET / HTTP/1.0\r\n".getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < flood; i++) {
                try (SocketChannel s = socketFrom("127.0.0.1", l.listener().address())) {
                    s.write(ByteBuffer.wrap(http));
                    UcxListenerExposureTest.readToEnd(s);
                }
            }
            await(flood + " refusals counted").atMost(DEADLINE).until(() -> l.refusals() == flood);
            long windows = 1 + (System.nanoTime() - started) / RefusalLog.WINDOW.toNanos();
            // Every refusal is accounted for: logged one by one, or counted in a summary.
            await("the summary lines").atMost(RefusalLog.WINDOW.plus(DEADLINE)).untilAsserted(() -> {
                List<String> mine = linesOf(captured, uri);
                long oneByOne = mine.stream()
                        .filter(line -> line.contains(uri + ": refused"))
                        .count();
                long summarised = 0;
                for (String line : mine) {
                    Matcher m = SUMMARY.matcher(line);
                    if (m.find()) {
                        summarised += Long.parseLong(m.group(1));
                        assertTrue(line.contains("handshake failed"), line);
                    }
                }
                assertTrue(
                        oneByOne <= RefusalLog.PER_WINDOW * windows,
                        oneByOne + " lines one by one in " + windows + " window(s)");
                assertEquals(flood, oneByOne + summarised, String.join("\n", mine));
            });
            stillServes(l.listener().address(), o);
        } finally {
            System.setErr(stderr);
        }
    }

    private static List<String> linesOf(ByteArrayOutputStream captured, String uri) {
        String all;
        synchronized (captured) {
            all = captured.toString(StandardCharsets.UTF_8);
        }
        return all.lines().filter(line -> line.contains(uri + ": ")).toList();
    }
}
