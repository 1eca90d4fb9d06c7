package org.ucx4j.comm.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * Flow control on {@code ucx://} (docs/WIRE.md, "Flow control"): an honest writer faster than its reader
 * waits for credit instead of growing the reader's memory; a raw peer that sends beyond its credit, or a
 * frame nobody asked for, has its comm failed at once with an error that says so, its messages drained,
 * and the listener goes on serving others.
 */
@Tag("native")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class UcxFlowControlTest {
    private static final Duration DEADLINE = Duration.ofSeconds(30);

    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    private final UcxTransport transport = new UcxTransport();
    private final List<AutoCloseable> toClose = new ArrayList<>();
    /** The listener's comms, as they are accepted. */
    private final LinkedBlockingQueue<UcxComm> accepted = new LinkedBlockingQueue<>();
    /** Opens once a test lets the listener's comms read. */
    private final CountDownLatch readersGo = new CountDownLatch(1);
    /** Every payload the listener's comms read, in order, then how each ended. */
    private final LinkedBlockingQueue<Object> serverSide = new LinkedBlockingQueue<>();

    @AfterEach
    void closeAll() throws Exception {
        readersGo.countDown();
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        transport.close();
    }

    /** A listener whose comms read nothing until {@link #readersGo} opens, then read until the end. */
    UcxTransport.Listener listen(CommOptions options) {
        UcxTransport.Listener l = (UcxTransport.Listener) transport.listen(
                URI.create("ucx://127.0.0.1:0"),
                comm -> {
                    accepted.add((UcxComm) comm);
                    try (comm) {
                        readersGo.await();
                        while (true) {
                            try (Message m = comm.read()) {
                                serverSide.add(new String(m.frame(0).toByteArray(), StandardCharsets.UTF_8));
                            }
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } catch (RuntimeException e) {
                        serverSide.add(e);
                    }
                },
                options);
        toClose.add(l);
        return l;
    }

    static CommOptions options() {
        return UcxListenerExposureTest.options(org.ucx4j.UcxConfig.builder(), Duration.ofSeconds(10));
    }

    @Test
    void anHonestWriterFasterThanItsReaderWaitsForCreditAndNothingIsLost() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        UcxComm client = (UcxComm) transport.connectAsync(l.address(), o).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        toClose.add(client);
        UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        int n = 2000;
        List<CompletableFuture<Void>> writes = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            writes.add(client.writeAsync(Message.ofBytes(("message " + i).getBytes(StandardCharsets.UTF_8))));
        }
        // The reader has read nothing, so no credit came back: the writer holds all but the window.
        assertEquals(n - UcxComm.CREDIT_WINDOW, client.waitingForCredit());
        await("the window's messages at the listener")
                .atMost(DEADLINE)
                .until(() -> server.headersReceived() == UcxComm.CREDIT_WINDOW);
        // Nothing more was sent: the listener's worker holds no unexpected message of this comm.
        assertTrue(l.runtime().worker.tagProbe(server.myTag(), -1L).isEmpty());
        assertEquals(n - UcxComm.CREDIT_WINDOW, client.waitingForCredit());
        readersGo.countDown();
        for (int i = 0; i < n; i++) {
            Object got = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertEquals("message " + i, got, "message " + i + " of " + n);
        }
        CompletableFuture.allOf(writes.toArray(CompletableFuture[]::new)).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        assertEquals(0, client.waitingForCredit());
        // Large messages (their frames asked for) still flow, well past the window.
        byte[] big = new byte[1 << 20];
        big[0] = 'b';
        for (int i = 0; i < 2 * UcxComm.CREDIT_WINDOW; i++) {
            client.write(Message.ofBytes(big));
            Object got = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertTrue(got instanceof String s && s.length() == big.length && s.charAt(0) == 'b', "large message " + i);
        }
    }

    @Test
    void aPeerSendingBeyondItsCreditIsCutOffItsFloodDrainedAndTheListenerServes() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        long rssBefore = HostileInputTest.rssBytes();
        long discardedBefore = l.runtime().discarded();
        int flood = 16 * 1024;
        byte[] message = UcxListenerExposureTest.inlineMessage(new byte[8000]);
        try (RawUcxClient r = new RawUcxClient(l.address())) {
            r.handshake(o, l.address().toString());
            UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            // 16,384 messages of 8 KiB (128 MiB), ignoring every grant, 1,024 at a time: without flow
            // control UCX kept them all for a comm whose reader does not read. Now the comm fails at the
            // first message beyond its credit and the rest of each round is drained.
            for (int sent = 0; sent < flood; sent += 1024) {
                List<CompletableFuture<Void>> sends = new ArrayList<>(1024);
                for (int i = 0; i < 1024; i++) {
                    sends.add(r.endpoint.tagSendAsync(message, r.result.peerTag()));
                }
                r.worker.await(
                        CompletableFuture.allOf(sends.stream()
                                .map(f -> f.handle((v, e) -> null))
                                .toArray(CompletableFuture[]::new)),
                        DEADLINE);
                if (sent == 0) {
                    await("the flooding comm cut off").atMost(DEADLINE).until(server::isClosed);
                    assertEquals(UcxComm.CREDIT_WINDOW + 1, server.headersReceived());
                }
                long beyond = sent + 1024 - UcxComm.CREDIT_WINDOW - 1;
                await("round " + sent / 1024 + " drained")
                        .atMost(DEADLINE)
                        .until(() -> l.runtime().discarded() - discardedBefore >= beyond);
            }
        }
        long grown = HostileInputTest.rssBytes() - rssBefore;
        System.out.printf(
                "%s: %d messages of 8 KiB beyond credit, resident memory %+d KiB%n",
                getClass().getSimpleName(), flood, grown >> 10);
        assertTrue(grown < (64L << 20), "128 MiB sent beyond credit grew resident memory by " + grown + " bytes");
        readersGo.countDown();
        Object end = serverEnd();
        assertProtocolError(end, "flow control");
        stillServes(l);
    }

    /**
     * A close whose marker waits behind messages the peer gave no credit for, and then the peer goes: the
     * comm lets go of its endpoint, tag and runtime at once, and every write that waited fails, instead of
     * all of it staying until UCX fails the endpoint or the comm context closes (and the close waiting
     * for its close timeout).
     */
    @Test
    void aCloseWaitingForCreditLetsGoWhenThePeerGoes() throws Exception {
        CommOptions o = CommOptions.builder()
                .config(options().config())
                .closeTimeout(Duration.ofSeconds(60))
                .build();
        UcxTransport.Listener l = listen(o);
        UcxComm client = (UcxComm) transport.connectAsync(l.address(), o).get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        toClose.add(client);
        UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        int beyond = 10;
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        for (int i = 0; i < UcxComm.CREDIT_WINDOW + beyond; i++) {
            writes.add(client.writeAsync(Message.ofBytes(("message " + i).getBytes(StandardCharsets.UTF_8))));
        }
        await("the window's messages at the listener")
                .atMost(DEADLINE)
                .until(() -> server.headersReceived() == UcxComm.CREDIT_WINDOW);
        assertEquals(beyond, client.waitingForCredit());
        Thread closer = Thread.ofVirtual().name("closer").start(client::close);
        await("the close began").atMost(DEADLINE).until(client::isClosed);
        server.abort();
        await("the client let go of its endpoint").atMost(DEADLINE).until(client::finished);
        for (int i = 0; i < writes.size(); i++) {
            CompletableFuture<Void> w = writes.get(i);
            await("write " + i + " ended").atMost(DEADLINE).until(w::isDone);
            assertEquals(i >= UcxComm.CREDIT_WINDOW, w.isCompletedExceptionally(), "write " + i + " failed");
        }
        // The close gave up with the marker (its close timeout is a minute).
        assertTrue(closer.join(DEADLINE), "close() returned");
    }

    @Test
    void aFrameNobodyAskedForFailsItsCommAndIsDrained() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        long discardedBefore = l.runtime().discarded();
        try (RawUcxClient r = new RawUcxClient(l.address())) {
            r.handshake(o, l.address().toString());
            UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            r.endpoint.tagSend(new byte[4096], r.result.peerTag() | UcxRuntime.FRAMES);
            await("the comm failed").atMost(DEADLINE).until(server::isClosed);
            await("the frame drained").atMost(DEADLINE).until(() -> l.runtime().discarded() > discardedBefore);
        }
        readersGo.countDown();
        Object end = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        assertProtocolError(end, "had not asked for");
        stillServes(l);
    }

    @Test
    void aControlRecordAskingForFramesNeverSentFailsTheComm() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        try (RawUcxClient r = new RawUcxClient(l.address())) {
            r.handshake(o, l.address().toString());
            UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            // Frames of message 5: the listener's comm sent none.
            r.endpoint.tagSend(controlRecord(1000, 5), r.result.peerTag() | UcxRuntime.CONTROL);
            await("the comm failed").atMost(DEADLINE).until(server::isClosed);
        }
        readersGo.countDown();
        Object end = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        assertProtocolError(end, "asked for the frames of message 5");
        stillServes(l);
    }

    @Test
    void controlRecordsThatChangeNothingFailTheCommOnceBeyondTheAllowance() throws Exception {
        CommOptions o = options();
        UcxTransport.Listener l = listen(o);
        try (RawUcxClient r = new RawUcxClient(l.address())) {
            r.handshake(o, l.address().toString());
            UcxComm server = accepted.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            byte[] rec = controlRecord(UcxComm.CREDIT_WINDOW, 0); // the initial grant again: valid, changes nothing
            for (int i = 0; i < UcxComm.STALE_CONTROL_ALLOWANCE; i++) {
                r.endpoint.tagSend(rec, r.result.peerTag() | UcxRuntime.CONTROL);
            }
            // Within the allowance (records may overtake each other): the comm lives.
            stillOpenAfterAMessage(r, server);
            for (int i = 0; i < 1000 && !server.isClosed(); i++) {
                r.endpoint.tagSend(rec, r.result.peerTag() | UcxRuntime.CONTROL);
            }
            await("the comm failed").atMost(DEADLINE).until(server::isClosed);
        }
        readersGo.countDown();
        Object end = serverEnd();
        assertProtocolError(end, "changed nothing");
        stillServes(l);
    }

    /** A flow control record written by hand: the 16-byte header of type 2, then G and F. */
    private static byte[] controlRecord(long granted, long framesUpTo) {
        ByteBuffer rec = ByteBuffer.allocate(WireFormat.CONTROL_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        rec.put(HostileInputTest.header(WireFormat.MAGIC, WireFormat.VERSION, WireFormat.TYPE_CONTROL, 0, 0));
        return rec.putLong(granted).putLong(framesUpTo).array();
    }

    /** What the listener's comm ended with: the first failure it reported, after any messages it read. */
    private Object serverEnd() throws InterruptedException {
        for (Object got = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                got != null;
                got = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            if (got instanceof Throwable) {
                return got;
            }
        }
        return null;
    }

    private static void assertProtocolError(Object end, String expected) {
        assertTrue(end instanceof CommProtocolException, "expected a protocol error, got " + end);
        assertTrue(((Throwable) end).getMessage().contains(expected), ((Throwable) end).getMessage());
    }

    /** The raw client's message reaches the listener's comm, which is then still open. */
    private static void stillOpenAfterAMessage(RawUcxClient r, UcxComm server) {
        r.sendToComm(UcxListenerExposureTest.inlineMessage("alive".getBytes(StandardCharsets.UTF_8)));
        await("the message at the listener").atMost(DEADLINE).until(() -> server.headersReceived() == 1);
        assertTrue(!server.isClosed(), "the comm failed within the allowance");
    }

    /** An honest client gets its message through (the listener's comms read once {@link #readersGo} opened). */
    private void stillServes(UcxTransport.Listener l) throws Exception {
        readersGo.countDown();
        try (Comm c = transport.connectAsync(l.address(), options()).get(DEADLINE.toSeconds(), TimeUnit.SECONDS)) {
            c.write(Message.ofBytes("still serving".getBytes(StandardCharsets.UTF_8)));
            Object got = serverSide.poll(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            assertEquals("still serving", got);
        }
    }
}
