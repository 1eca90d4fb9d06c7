package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * Socket {@code ucx://} comms between two comm contexts of one host (here two in this JVM: to the handshake
 * they are two processes) run on a pair of workers kept for each other, on shared memory
 * ({@link SameHost}); comms of one context to another share that pair; a side that does not want it keeps
 * the pair on the shared workers; a client that shows a token the listener did not offer, or one of no
 * other process of this host, is refused before its worker address reaches UCX.
 */
@Tag("native")
class SameHostWorkersTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final CommOptions OFF = CommOptions.builder()
            .config(UcxConfig.builder()
                    .set(CommKeys.SAME_HOST_SHARED_MEMORY, false)
                    .build())
            .build();

    @BeforeAll
    static void needs() {
        Requirements.assumeUcx();
        assumeTrue(SameHost.host().isPresent(), "no /proc here: same-host workers are off");
    }

    /** A connected pair: the client's comm and the one its listener accepted. */
    private record Pair(Comm client, Comm server) {}

    private static Pair connect(CommContext from, CommListener to, BlockingQueue<Comm> accepted, CommOptions options)
            throws Exception {
        Comm c = from.connectAsync(to.address(), options).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        Comm s = accepted.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertTrue(s != null, "the listener accepted no comm");
        return new Pair(c, s);
    }

    private static void roundTrip(Pair p, int size) throws Exception {
        byte[] payload = new byte[size];
        new java.util.Random(size).nextBytes(payload);
        p.client().writeAsync(Message.ofBytes(payload)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        try (Message m = p.server().read(WAIT)) {
            assertArrayEquals(payload, m.frame(0).toByteArray());
        }
        p.server().writeAsync(Message.ofBytes(payload)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        try (Message m = p.client().read(WAIT)) {
            assertArrayEquals(payload, m.frame(0).toByteArray());
        }
    }

    /**
     * {@code count} messages of {@code size} bytes written without waiting, then read: what a bandwidth run
     * does, with the content checked (a segment size UCX cannot take, 64 KiB, truncated or lost such a
     * stream without an error).
     */
    private static void stream(Pair p, int size, int count) throws Exception {
        java.util.Random random = new java.util.Random(size * 31L + count);
        List<byte[]> sent = new java.util.ArrayList<>();
        List<java.util.concurrent.CompletableFuture<Void>> writes = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] payload = new byte[size];
            random.nextBytes(payload);
            sent.add(payload);
            writes.add(p.client().writeAsync(Message.ofBytes(payload)));
        }
        for (int i = 0; i < count; i++) {
            try (Message m = p.server().read(WAIT)) {
                assertArrayEquals(sent.get(i), m.frame(0).toByteArray(), "message " + i + " of " + size + " bytes");
            }
        }
        for (var w : writes) {
            w.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
    }

    private static boolean onSharedMemory(Comm c) {
        List<String> t = c.carriedBy(1 << 20);
        return t.stream().anyMatch(SameHost.SHARED_MEMORY::contains) && !t.contains("tcp");
    }

    @Test
    void twoContextsOfOneHostPairOnWorkersOfTheirOwnOverSharedMemory() throws Exception {
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommContext b = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults())) {
            UcxRuntime shared = ((UcxTransport.Listener) l).runtime();
            assumeTrue(!shared.sameHostTransports().isEmpty(), "this UCX has no shared memory transport");
            Pair one = connect(b, l, accepted, CommOptions.defaults());
            Pair two = connect(b, l, accepted, CommOptions.defaults());
            try (Comm c1 = one.client();
                    Comm s1 = one.server();
                    Comm c2 = two.client();
                    Comm s2 = two.server()) {
                UcxRuntime server = ((UcxComm) s1).runtime();
                UcxRuntime client = ((UcxComm) c1).runtime();
                assertTrue(server.key.isSameHost() && client.key.isSameHost(), "both sides on same-host workers");
                assertNotSame(shared, server);
                assertSame(server, ((UcxComm) s2).runtime(), "one worker per peer process, not per comm");
                assertSame(client, ((UcxComm) c2).runtime());
                for (Comm c : List.of(c1, s1, c2, s2)) {
                    assertTrue(onSharedMemory(c), "1 MiB carried by " + c.carriedBy(1 << 20));
                }
                System.out.println("SameHostWorkersTest: 1 MiB on " + c1.carriedBy(1 << 20) + " / "
                        + s1.carriedBy(1 << 20) + ", 8 B on " + c1.carriedBy(8) + "; worker transports "
                        + server.sameHostTransports());
                // Around the shared memory segment's size (SameHost.SEGMENT_SIZE) and well past it.
                for (int size : new int[] {8, 32_767, 32_768, 32_833, 100_003, 64 << 10, 4 << 20, 16 << 20}) {
                    roundTrip(one, size);
                    roundTrip(two, size);
                }
                stream(one, (1 << 20) + 1, 32);
                stream(two, 40_000, 64);
            }
        }
    }

    @Test
    void aContextKeepsAtMostItsCapOfSameHostWorkersAndThenStaysOnTheSharedOne() throws Exception {
        // Raw clients that each claim another process of this host: the listener makes a worker for each
        // until its cap, then offers nothing more (and the next local peer pairs on the shared worker).
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        List<RawUcxClient> raws = new java.util.ArrayList<>();
        List<Comm> held = new java.util.ArrayList<>();
        try (CommContext a = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults())) {
            UcxTransport.Listener listener = (UcxTransport.Listener) l;
            assumeTrue(listener.offersSameHost(), "no shared memory transport here");
            int offered = 0;
            for (int i = 0; i <= UcxRuntimes.MAX_SAME_HOST_WORKERS; i++) {
                RawUcxClient raw = new RawUcxClient(l.address());
                raws.add(raw);
                String process = String.format("%08x", 0xc0ffee00 + i);
                Handshake.Result r = Handshake.client(
                        new StreamHandshakeChannel(raw.socket),
                        CommOptions.defaults(),
                        0,
                        l.address().toString(),
                        null,
                        offer -> offer.isSameHost()
                                ? new Handshake.Endpoint(
                                        raw.myTag, raw.worker.address().bytes(), SameHost.token(process))
                                : new Handshake.Endpoint(
                                        raw.myTag, raw.worker.address().bytes()));
                offered += r.peerEndpoint().isSameHost() ? 1 : 0;
                Comm s = accepted.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
                assertTrue(s != null, "accepted " + i);
                held.add(s); // in use: a worker no comm uses makes room for a new one
            }
            assertEquals(UcxRuntimes.MAX_SAME_HOST_WORKERS, offered, "offers up to the cap, then none");
            assertTrue(listener.runtimes().sameHostCount() <= UcxRuntimes.MAX_SAME_HOST_WORKERS);
        } finally {
            held.forEach(Comm::abort);
            for (RawUcxClient raw : raws) {
                raw.close();
            }
        }
    }

    @Test
    void aContextThatOnlyConnectsKeepsNoMessageMemoryOnceItsWorkersAreGone() throws Exception {
        // The client lets go of its shared runtime once the comm holds its same-host worker; messages that
        // come after the shared runtime closed live in the context's scopes, which the same-host worker's
        // close must retire, or a slab stays for good.
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults())) {
            assumeTrue(((UcxTransport.Listener) l).offersSameHost(), "no shared memory transport here");
            CommContext b = CommContext.create();
            UcxRuntimes runtimes;
            try {
                Pair p = connect(b, l, accepted, CommOptions.defaults());
                UcxRuntime sameHost = ((UcxComm) p.client()).runtime();
                assertTrue(sameHost.key.isSameHost());
                runtimes = sameHost.owner();
                org.awaitility.Awaitility.await("the client's shared runtime closed")
                        .atMost(WAIT)
                        .until(() -> runtimes.open() == 1);
                try (Comm c = p.client();
                        Comm s = p.server()) {
                    roundTrip(p, 8);
                    roundTrip(p, 1024);
                }
            } finally {
                b.close();
            }
            org.awaitility.Awaitility.await("no message memory held")
                    .atMost(WAIT)
                    .until(() -> runtimes.scopes.held() == 0);
        }
    }

    @Test
    void eitherSidesNoKeepsThePairOnTheSharedWorkers() throws Exception {
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommContext b = CommContext.create();
                CommListener on = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults());
                CommListener off = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, OFF)) {
            UcxRuntime shared = ((UcxTransport.Listener) on).runtime();
            for (Pair p : List.of(
                    connect(b, on, accepted, OFF), // the client declines the offer
                    connect(b, off, accepted, CommOptions.defaults()))) { // no offer
                try (Comm c = p.client();
                        Comm s = p.server()) {
                    assertFalse(((UcxComm) c).runtime().key.isSameHost());
                    assertSame(shared, ((UcxComm) s).runtime());
                    roundTrip(p, 1 << 20);
                }
            }
        }
    }

    @Test
    void aContextConnectingToItsOwnListenerKeepsToTheSharedWorker() throws Exception {
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults())) {
            Pair p = connect(a, l, accepted, CommOptions.defaults());
            try (Comm c = p.client();
                    Comm s = p.server()) {
                assertSame(((UcxTransport.Listener) l).runtime(), ((UcxComm) c).runtime());
                assertSame(((UcxComm) c).runtime(), ((UcxComm) s).runtime());
                roundTrip(p, 1 << 20);
            }
        }
    }

    /**
     * A raw client's handshake whose endpoint carries {@code token} and garbage for a worker address: UCX
     * aborts the process on a malformed address, so a refusal that came after it reached UCX would end
     * this JVM.
     */
    private static Throwable refusedToken(URI listener, byte[] token) throws Exception {
        byte[] garbage = new byte[64];
        java.util.Arrays.fill(garbage, (byte) 0x5A);
        try (RawUcxClient raw = new RawUcxClient(listener)) {
            return assertThrows(
                    CommException.class,
                    () -> Handshake.client(
                            new StreamHandshakeChannel(raw.socket),
                            CommOptions.defaults(),
                            0,
                            listener.toString(),
                            null,
                            offer -> new Handshake.Endpoint(raw.myTag, garbage, token)));
        }
    }

    @Test
    void aTokenThatNamesNoOtherProcessOfThisHostIsRefused() throws Exception {
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults())) {
            UcxTransport.Listener listener = (UcxTransport.Listener) l;
            String own = new String(SameHost.token(listener.runtimes().process()), StandardCharsets.UTF_8);
            for (String token : List.of(
                    own, // the listener's own process
                    "another boot 0 0 uid 0|0123abcd", // another host
                    SameHost.hostPart().orElseThrow() + "|not-hex",
                    SameHost.host().get() + "|0123abcd")) { // another UCX or shared memory settings
                Throwable t = refusedToken(l.address(), token.getBytes(StandardCharsets.UTF_8));
                assertTrue(
                        t.getMessage().contains("does not name another process of this host"),
                        token + ": " + t.getMessage());
            }
            // The listener counts a refusal after the client read it: wait for the count.
            org.awaitility.Awaitility.await().atMost(WAIT).until(() -> listener.refusals() == 4);
            assertNull(accepted.poll(), "no comm was accepted");
            assertEquals(0, listener.runtimes().sameHostCount(), "no same-host worker was made");
        }
    }

    @Test
    void aTokenWithoutTheListenersOfferIsRefused() throws Exception {
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, OFF)) {
            assertFalse(((UcxTransport.Listener) l).offersSameHost(), "no offer with the key off");
            // By hand: our own client never sends a token without an offer.
            try (RawUcxClient raw = new RawUcxClient(l.address())) {
                StreamHandshakeChannel ch = new StreamHandshakeChannel(raw.socket);
                ch.send(Handshake.hello(false, new byte[Handshake.NONCE_BYTES], 0, "raw", l.toString(), null));
                ch.receive(); // HELLO
                Handshake.Proof offer = Handshake.parseProof(ch.receive(), false);
                assertFalse(offer.endpoint().isSameHost());
                ch.send(Handshake.proof(
                        new byte[0],
                        new Handshake.Endpoint(raw.myTag, raw.worker.address().bytes(), SameHost.token("0123abcd"))));
                java.nio.ByteBuffer verdict =
                        java.nio.ByteBuffer.wrap(ch.receive()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                assertEquals(Handshake.VERDICT, verdict.get(6));
                assertEquals(Handshake.Verdict.REFUSED_OTHER.code, verdict.get(8));
                byte[] reason = new byte[verdict.getShort(9)];
                verdict.position(11).get(reason);
                String why = new String(reason, StandardCharsets.UTF_8);
                assertTrue(why.contains("did not offer"), why);
            }
            UcxTransport.Listener listener = (UcxTransport.Listener) l;
            org.awaitility.Awaitility.await().atMost(WAIT).until(() -> listener.refusals() == 1);
            assertNull(accepted.poll());
            assertEquals(0, listener.runtimes().sameHostCount());
        }
    }
}
