package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.CloseMode;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * A {@code ucx://} listener exposed to peers that do not play by the rules, each written here by hand:
 * a socket sending bytes that are not ucx4j's, silent sockets, messages to the public IP-less accept
 * tag that are too long or not a HELLO, a UCX endpoint sending to tags it was never given, a flood of
 * messages to tags nobody receives, and headers claiming the most the limits allow. Each test asserts
 * the refusal itself and that the listener then still serves an honest client; resources (file
 * descriptors, resident memory, UCX's unexpected queue) come back to a bounded level.
 */
@Tag("native")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class UcxListenerExposureTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    private final UcxTransport transport = new UcxTransport();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    /** What the listener's comms read, in order, and how they failed. */
    private final AtomicInteger serverReads = new AtomicInteger();

    private final LinkedBlockingQueue<Throwable> serverFailures = new LinkedBlockingQueue<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        transport.close();
    }

    static CommOptions options(UcxConfig.Builder config, Duration connectTimeout) {
        return CommOptions.builder()
                .config(config.build())
                .connectTimeout(connectTimeout)
                .build();
    }

    static CommOptions options() {
        return options(UcxConfig.builder(), Duration.ofSeconds(10));
    }

    /** A ucx:// listener whose comms echo every message. */
    UcxTransport.Listener listen(CommOptions options) {
        UcxTransport.Listener l = (UcxTransport.Listener) transport.listen(
                URI.create("ucx://127.0.0.1:0"),
                comm -> {
                    try (comm) {
                        while (true) {
                            try (Message m = comm.read()) {
                                serverReads.incrementAndGet();
                                comm.write(m);
                            }
                        }
                    } catch (RuntimeException e) {
                        serverFailures.add(e);
                    }
                },
                options);
        toClose.add(l);
        return l;
    }

    Comm connect(URI address, CommOptions options) throws Exception {
        Comm c = transport.connectAsync(address, options).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        toClose.add(c);
        return c;
    }

    /** An honest client gets its message echoed, over the given address. */
    void stillServes(URI address, CommOptions options) throws Exception {
        try (Comm c = transport.connectAsync(address, options).get(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            byte[] sent = "still serving".getBytes(StandardCharsets.UTF_8);
            c.write(Message.ofBytes(sent));
            try (Message m = c.read(DEADLINE)) {
                assertArrayEquals(sent, m.frame(0).toByteArray());
            }
        }
    }

    /** Reads until the listener closes the socket; returns what came before the end. */
    static byte[] readToEnd(SocketChannel s) throws Exception {
        return HostileInputTest.within(DEADLINE, () -> {
            ByteBuffer all = ByteBuffer.allocate(64 * 1024);
            try {
                while (s.read(all) >= 0) {
                    if (!all.hasRemaining()) {
                        throw new AssertionError("the listener sent more than 64 KiB to a stranger");
                    }
                }
            } catch (IOException e) {
                // reset by the listener: closed all the same
            }
            return Arrays.copyOf(all.array(), all.position());
        });
    }

    static long openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    static SocketChannel socketTo(URI listener) throws IOException {
        return SocketChannel.open(new InetSocketAddress("127.0.0.1", listener.getPort()));
    }

    // ------------------------------------------------------------------ the socket

    @Test
    void sixteenBytesOfGarbageToTheListenersPortAreRefusedAndTheProcessGoesOn() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        byte[] http = "GET / HTTP/1.0\r\n".getBytes(StandardCharsets.US_ASCII);
        assertEquals(16, http.length);
        try (SocketChannel s = socketTo(l.address())) {
            s.write(ByteBuffer.wrap(http));
            // The listener answers a refusing VERDICT (its first 4 bytes are a length) and hangs up.
            byte[] answer = readToEnd(s);
            assertTrue(answer.length > 12, "no VERDICT before the listener hung up: " + answer.length + " bytes");
            assertEquals(Handshake.VERDICT, answer[4 + 6]);
            assertEquals(Handshake.Verdict.REFUSED_OTHER, Handshake.Verdict.of(answer[4 + 8]));
        }
        await("the refusal counted").atMost(DEADLINE).until(() -> l.refusals() == 1);
        assertTrue(l.lastRefusal().contains("not a ucx4j-comm peer"), l.lastRefusal());
        stillServes(l.address(), o);
    }

    @Test
    void silentConnectionsAreClosedAtTheHandshakeDeadlineAndTheirDescriptorsComeBack() throws Exception {
        CommOptions o = options(UcxConfig.builder(), Duration.ofSeconds(2));
        UcxTransport.Listener l = listen(o);
        stillServes(l.address(), o); // the worker and its transports are up before counting
        long fdsBefore = openFds();
        List<SocketChannel> silent = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            silent.add(socketTo(l.address()));
        }
        for (SocketChannel s : silent) {
            assertEquals(0, readToEnd(s).length, "the listener sent something to a silent client");
            s.close();
        }
        // The deadline closes the socket first, then the handshake's failure is counted.
        await("40 refusals counted").atMost(DEADLINE).until(() -> l.refusals() == 40);
        assertTrue(l.lastRefusal().contains("did not finish within"), l.lastRefusal());
        await("file descriptors back at " + fdsBefore)
                .atMost(DEADLINE)
                .untilAsserted(() -> assertTrue(openFds() <= fdsBefore, openFds() + " open"));
        stillServes(l.address(), o);
    }

    @Test
    void connectionsBeyondMaxPendingHandshakesAreClosedAtOnce() throws Exception {
        CommOptions o = options(UcxConfig.builder().set(CommKeys.MAX_PENDING_HANDSHAKES, 4), Duration.ofSeconds(60));
        UcxTransport.Listener l = listen(o);
        List<SocketChannel> silent = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            silent.add(socketTo(l.address()));
        }
        long started = System.nanoTime();
        try (SocketChannel fifth = socketTo(l.address())) {
            assertEquals(0, readToEnd(fifth).length);
        }
        // Closed long before the 60 s handshake deadline: refused for the bound, not timed out.
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(30));
        await("the refusal counted").atMost(DEADLINE).until(() -> l.refusals() == 1);
        assertTrue(l.lastRefusal().contains("max-pending-handshakes"), l.lastRefusal());
        for (SocketChannel s : silent) {
            s.close();
        }
        // The listener frees a slot when it reads the closed socket's end: until then a newcomer is the
        // fifth and is refused (CI saw that once).
        await("the slots back").atMost(DEADLINE).until(() -> l.gate().slots().taken() == 0);
        stillServes(l.address(), o);
    }

    // ------------------------------------------------------------------ the IP-less accept tag

    @Test
    void anOversizedAndAGarbageMessageToTheIplessAcceptTagAreDroppedAndTheListenerServes() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        URI ipless = l.addresses().get(1);
        UcxTransport.IplessAddress a = UcxTransport.parseIpless(ipless);
        try (UcxContext ctx = UcxContext.create();
                UcxWorker w = ctx.newWorker()) {
            UcxEndpoint ep = w.connect(a.worker());
            ep.tagSend(new byte[HandshakeChannel.MAX_RECORD + 4096], a.acceptTag());
            await("the oversized message refused").atMost(DEADLINE).until(() -> l.refusals() == 1);
            assertTrue(l.lastRefusal().toLowerCase(Locale.ROOT).contains("truncated"), l.lastRefusal());
            byte[] garbage = new byte[16];
            new SecureRandom().nextBytes(garbage);
            ep.tagSend(garbage, a.acceptTag());
            await("the garbage refused").atMost(DEADLINE).until(() -> l.refusals() == 2);
            assertTrue(l.lastRefusal().contains("not a ucx4j-comm handshake record"), l.lastRefusal());
            stillServes(ipless, o);
            stillServes(l.address(), o);
            ep.closeAsync(CloseMode.FORCE);
        }
    }

    @Test
    void withASecretAnIplessHelloWhoseWorkerAddressIsNotVouchedForNeverReachesUcx() throws Exception {
        // A HELLO that claims a secret, with a worker address UCX would abort the process on (UCX parses
        // worker addresses with assertions, on 1.13 and 1.22 alike) and a MAC made without the secret.
        byte[] forgedMac = new byte[Handshake.MAC_BYTES];
        iplessHelloIsRefusedBeforeUcx(
                Handshake.hello(
                        true, new byte[Handshake.NONCE_BYTES], 77, "mallory", "x", notAWorkerAddress(), forgedMac),
                "no valid MAC of its worker address");
    }

    @Test
    void withASecretAnIplessHelloClaimingNoSecretNeverReachesUcx() throws Exception {
        // "I have no secret" must not skip the MAC check: the disagreement would be refused by the
        // handshake, but only after the listener had given this address to UCX (which aborts on it).
        iplessHelloIsRefusedBeforeUcx(
                Handshake.hello(false, new byte[Handshake.NONCE_BYTES], 77, "mallory", "x", notAWorkerAddress()),
                "without the shared secret");
    }

    private static byte[] notAWorkerAddress() {
        byte[] bytes = new byte[200];
        Arrays.fill(bytes, (byte) 0x5a);
        return bytes;
    }

    /** Sends {@code hello} to the accept tag of a listener with a secret: refused, and both addresses serve. */
    private void iplessHelloIsRefusedBeforeUcx(byte[] hello, String reason) throws Exception {
        CommOptions o = options(UcxConfig.builder().set(CommKeys.AUTH_SECRET, "exposure-test-secret"), DEADLINE);
        UcxTransport.Listener l = listen(o);
        URI ipless = l.addresses().get(1);
        UcxTransport.IplessAddress a = UcxTransport.parseIpless(ipless);
        try (UcxContext ctx = UcxContext.create();
                UcxWorker w = ctx.newWorker()) {
            UcxEndpoint ep = w.connect(a.worker());
            ep.tagSend(hello, a.acceptTag());
            await("the HELLO refused").atMost(DEADLINE).until(() -> l.refusals() == 1);
            assertTrue(l.lastRefusal().contains(reason), l.lastRefusal());
            ep.closeAsync(CloseMode.FORCE);
        }
        stillServes(ipless, o);
        stillServes(l.address(), o);
    }

    // ------------------------------------------------------------------ tags it was never given

    /** A whole ucx4j-comm message of one inline frame, as a comm would accept it on its tag. */
    static byte[] inlineMessage(byte[] payload) {
        byte[] head = HostileInputTest.header(
                WireFormat.MAGIC,
                WireFormat.VERSION,
                WireFormat.TYPE_MESSAGE,
                WireFormat.FLAG_INLINE,
                1,
                payload.length);
        byte[] whole = Arrays.copyOf(head, head.length + payload.length);
        System.arraycopy(payload, 0, whole, head.length, payload.length);
        return whole;
    }

    @Test
    void aUcxEndpointSendingToTagsItWasNeverGivenReachesNoComm() throws Exception {
        CommOptions o = options(UcxConfig.builder().set(CommKeys.AUTH_SECRET, "exposure-test-secret"), DEADLINE);
        UcxTransport.Listener l = listen(o);
        Comm client = connect(l.address(), o);
        byte[] first = "honest 1".getBytes(StandardCharsets.UTF_8);
        client.write(Message.ofBytes(first));
        try (Message m = client.read(DEADLINE)) {
            assertArrayEquals(first, m.frame(0).toByteArray());
        }
        UcxRuntime rt = l.runtime();
        long discardedBefore = rt.discarded();
        // The tags ucx4j-comm used to hand out (a counter under "U4J"), the accept range's neighbours, and
        // random ones; small messages a comm would take as its own, and 1 MiB ones (rendezvous: the send
        // completes only once the listener's side took or dropped it).
        List<Long> tags = new ArrayList<>();
        for (long n = 0; n < 64; n++) {
            tags.add(0x55344A0000000000L | n);
            tags.add(UcxRuntime.ACCEPT_TAGS - 1 - n);
        }
        SecureRandom random = new SecureRandom();
        for (int i = 0; i < 128; i++) {
            tags.add(random.nextLong());
        }
        byte[] injected = inlineMessage("injected".getBytes(StandardCharsets.UTF_8));
        byte[] large = new byte[1 << 20];
        System.arraycopy(injected, 0, large, 0, injected.length);
        try (UcxContext ctx = UcxContext.create();
                UcxWorker w = ctx.newWorker()) {
            UcxEndpoint ep =
                    w.connect(UcxTransport.parseIpless(l.addresses().get(1)).worker());
            List<CompletableFuture<Void>> sends = new ArrayList<>();
            for (long t : tags) {
                sends.add(ep.tagSendAsync(injected, t));
                sends.add(ep.tagSendAsync(large, t));
            }
            CompletableFuture<Void> all = CompletableFuture.allOf(
                    sends.stream().map(f -> f.handle((v, e) -> null)).toArray(CompletableFuture[]::new));
            await("every injected message taken off the listener's worker")
                    .atMost(DEADLINE)
                    .until(() -> all.isDone() && rt.discarded() - discardedBefore >= sends.size());
            ep.closeAsync(CloseMode.FORCE);
        }
        // Had any reached the comm, its echo would come before this one.
        byte[] second = "honest 2".getBytes(StandardCharsets.UTF_8);
        client.write(Message.ofBytes(second));
        try (Message m = client.read(DEADLINE)) {
            assertArrayEquals(second, m.frame(0).toByteArray());
        }
        assertEquals(2, serverReads.get());
        assertTrue(serverFailures.isEmpty(), "the honest comm failed: " + serverFailures);
        assertFalse(client.isClosed());
    }

    @Test
    void aFloodOfMessagesToTagsNobodyReceivesIsDrainedInBoundedMemory() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        stillServes(l.address(), o);
        UcxRuntime rt = l.runtime();
        long rssBefore = HostileInputTest.rssBytes();
        SecureRandom random = new SecureRandom();
        byte[] chunk = new byte[8 * 1024];
        int rounds = 32;
        int perRound = 1024; // 8 MiB a round, 256 MiB in all
        try (UcxContext ctx = UcxContext.create();
                UcxWorker w = ctx.newWorker()) {
            UcxEndpoint ep =
                    w.connect(UcxTransport.parseIpless(l.addresses().get(1)).worker());
            long sent = 0;
            long base = rt.discarded();
            for (int r = 0; r < rounds; r++) {
                List<CompletableFuture<Void>> sends = new ArrayList<>(perRound);
                for (int i = 0; i < perRound; i++) {
                    sends.add(ep.tagSendAsync(chunk, random.nextLong()));
                }
                w.await(CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)), DEADLINE);
                sent += perRound;
                long expected = sent;
                await("round " + r + " drained").atMost(DEADLINE).until(() -> rt.discarded() - base >= expected);
            }
            ep.closeAsync(CloseMode.FORCE);
        }
        long grown = HostileInputTest.rssBytes() - rssBefore;
        System.out.printf(
                "%s: %d messages of 8 KiB to unknown tags, %d discarded, resident memory %+d KiB%n",
                getClass().getSimpleName(), rounds * perRound, rt.discarded(), grown >> 10);
        assertTrue(grown < (96L << 20), "256 MiB sent to unknown tags grew resident memory by " + grown + " bytes");
        stillServes(l.address(), o);
    }

    // ------------------------------------------------------------------ the most of everything

    @Test
    void headersClaimingTheMostOfEverythingReserveNothingTheyDoNotReceive() throws Exception {
        CommOptions o =
                options(UcxConfig.builder().set(CommKeys.MAX_IN_FLIGHT_PER_LISTENER, 1L << 20), Duration.ofSeconds(10));
        UcxTransport.Listener l = listen(o);
        long rssBefore = HostileInputTest.rssBytes();
        // max-frames frames of max-frame-size each: refused on the table, before any allocation.
        try (RawUcxClient r = new RawUcxClient(l.address())) {
            r.handshake(o, l.address().toString());
            long[] sizes = new long[o.maxFrames()];
            Arrays.fill(sizes, o.maxFrameSize());
            byte[] whole = HostileInputTest.header(WireFormat.MAGIC, 1, 0, 0, sizes.length, sizes);
            r.sendToComm(Arrays.copyOf(whole, WireFormat.HEADER_BYTES));
            r.sendToComm(Arrays.copyOfRange(whole, WireFormat.HEADER_BYTES, whole.length));
            Throwable t = serverFailures.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertTrue(t instanceof CommProtocolException, "expected a protocol error, got " + t);
            assertTrue(t.getMessage().contains("max-message-size is " + o.maxMessageSize()), t.getMessage());
        }
        // One frame of exactly max-message-size (4 GiB), its bytes never sent: allowed (its frame asked
        // for), and costs address space only. It fills the listener's in-flight budget (1 MiB here): an
        // honest comm's 512 KiB message then waits for it, and arrives once the hostile client is gone.
        Comm honest = connect(l.address(), o);
        byte[] half = new byte[512 * 1024];
        half[0] = 7;
        try (RawUcxClient r = new RawUcxClient(l.address())) {
            r.handshake(o, l.address().toString());
            r.sendToComm(HostileInputTest.header(WireFormat.MAGIC, 1, 0, 0, 1, o.maxMessageSize()));
            await("the hostile claim admitted")
                    .atMost(DEADLINE)
                    .until(() -> l.inFlight().used() == o.maxMessageSize());
            honest.writeAsync(Message.ofBytes(half));
            // It waits on the listener's budget, or, before that, on max-unclosed-bytes (the hostile
            // claim's frame is allocated, as address space, in the runtime's scopes).
            await("the honest message parked on the budget")
                    .atMost(DEADLINE)
                    .until(() ->
                            l.inFlight().waiting() == 1 || l.runtime().scopes.held() >= o.maxUnclosedBytes());
            long grown = HostileInputTest.rssBytes() - rssBefore;
            assertTrue(grown < (64L << 20), "a 4 GiB claim grew resident memory by " + grown + " bytes");
        }
        try (Message m = honest.read(DEADLINE)) {
            assertEquals(half.length, m.byteSize());
            assertEquals(7, m.frame(0).toByteArray()[0]);
        }
        await("the budget back to the honest echo's share")
                .atMost(DEADLINE)
                .until(() -> l.inFlight().used() == 0);
        stillServes(l.address(), o);
    }
}
