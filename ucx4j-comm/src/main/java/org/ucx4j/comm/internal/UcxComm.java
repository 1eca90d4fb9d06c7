package org.ucx4j.comm.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.ucx4j.CloseMode;
import org.ucx4j.MemoryKind;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxException;
import org.ucx4j.UcxTimeoutException;
import org.ucx4j.UcxWorker;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;

/**
 * A comm over one UCX endpoint, with tag messages: each side receives on the tag it announced in the
 * handshake. A message is one header message (header and frame table, and the frames themselves when
 * the whole fits in {@value #INLINE_LIMIT} bytes), then one tag message per non-empty frame, or in
 * {@code multi-buffer} mode one scatter-gather message of all frames. UCX keeps messages of one tag
 * from one endpoint in order, so posting a message's sends under one lock keeps concurrent writers'
 * messages whole. Receives are posted only after the header said what to expect, into memory from
 * the allocator, with the exact sizes; a peer sending more than it announced fails the receive (UCX
 * reports truncation) and aborts the comm.
 */
final class UcxComm extends AbstractComm {
    /** Header messages up to this size carry their frames inline; the receive buffer for headers. */
    static final int INLINE_LIMIT = 8192;

    private final UcxEndpoint endpoint;
    private final UcxWorker worker;
    private final long myTag;
    private final long peerTag;
    private final UcxRuntime runtime;
    private final MemorySegment headerBuffer;
    private final Arena headerArena = Arena.ofShared();
    private final Object sendLock = new Object();
    private volatile boolean released;
    private boolean closeSent;
    private volatile boolean lingering;
    private boolean endpointClosed;
    /** Messages posted and not yet completed; the close marker waits for them (UCX's flush does not). */
    private long sending;

    private CompletableFuture<Void> drained;
    private final MessageScopes scopes;
    /** The listener's bound on bytes received ahead, shared by its comms; null for a client's comm. */
    private final InFlightBudget listenerBudget;
    /** The handshake's socket ({@code ucx://}), kept as long as the endpoint; null for IP-less comms. */
    private final SocketChannel control;

    UcxComm(
            UcxEndpoint endpoint,
            long myTag,
            long peerTag,
            CommOptions options,
            URI local,
            URI peer,
            String peerIdentity,
            UcxRuntime runtime,
            InFlightBudget listenerBudget,
            SocketChannel control) {
        super(options, local, peer, peerIdentity);
        this.listenerBudget = listenerBudget;
        this.control = control;
        this.scopes = runtime.scopes;
        this.endpoint = endpoint;
        this.worker = endpoint.worker();
        this.myTag = myTag;
        this.peerTag = peerTag;
        this.runtime = runtime;
        this.headerBuffer = headerArena.allocate(INLINE_LIMIT, 64);
        start();
        if (control != null) {
            Thread.ofVirtual().name("ucx4j-ucx-control").start(this::watchControl);
        }
    }

    /**
     * Waits on the handshake's socket, which each side keeps open as long as its endpoint and closes
     * with it: its end is how a side learns promptly that the peer aborted, closed for good, or died
     * (UCX's endpoints made from worker addresses tell nothing of the kind by themselves). Nothing is
     * sent on it after the handshake; bytes there are a protocol error that fails the comm.
     */
    private void watchControl() {
        ByteBuffer b = ByteBuffer.allocate(1);
        String why;
        try {
            int n = control.read(b);
            why = n < 0 ? "the peer closed its connection" : "the peer sent bytes on the handshake socket";
        } catch (IOException e) {
            why = "the handshake socket failed: " + e.getMessage();
        }
        TcpTransport.closeQuietly(control);
        synchronized (sendLock) {
            if (endpointClosed) {
                return;
            }
        }
        failed(new CommClosedException("comm " + localAddress() + " <-> " + peerAddress() + " lost: " + why));
    }

    /** UCX's transports for a tag message of {@code frameSize} bytes on this comm's endpoint. */
    @Override
    public List<String> carriedBy(long frameSize) {
        if (isClosed() || frameSize < 0) {
            return List.of();
        }
        try {
            return endpoint.tagTransports(frameSize);
        } catch (RuntimeException e) {
            return List.of(); // closed meanwhile: nothing to say
        }
    }

    /** The endpoint's error handler: the peer died or the connection broke. */
    void onEndpointError(UcxException e) {
        failed(new CommClosedException(
                "comm " + localAddress() + " <-> " + peerAddress() + " lost: " + e.getMessage(), e));
    }

    // ------------------------------------------------------------------ receiving

    /**
     * Messages this side receives ahead, in header order. Each needs its header, then its frames; the
     * next header's receive is posted only after the previous message's frame receives (tag order),
     * so several rendezvous transfers can be in flight while the reader works. Bounded by
     * {@link #PIPELINE_DEPTH} messages and {@code max-in-flight} bytes of frames (256 MiB by default:
     * four 64 MiB frames can be in flight; with 64 MiB the receiver had one 64 MiB message at a time, a
     * round trip per message that GPU-to-GPU transfers, tens of microseconds each, feel), and by the
     * listener's {@link InFlightBudget} for an accepted comm.
     */
    private final ArrayDeque<Incoming> pipeline = new ArrayDeque<>();
    /** A header receive is posted and not yet completed (at most one: they share the header buffer). */
    private boolean headerPosted;
    /** No more headers: the close marker or an error was seen. */
    private boolean pipelineEnded;

    private long pipelineBytes;
    /** Whether the reader side (AbstractComm) is waiting for the pipeline's head. */
    private boolean headWanted;

    static final int PIPELINE_DEPTH = 8;

    /** One message being received: done with the message, or failed with an {@link End}. */
    private static final class Incoming {
        final CompletableFuture<Message> done = new CompletableFuture<>();
        long bytes;
        /** Bytes reserved in the listener's budget: 0 none yet, -1 given back for good. */
        private final java.util.concurrent.atomic.AtomicLong reserved = new java.util.concurrent.atomic.AtomicLong();

        /** Records a reservation; false when the message was dropped meanwhile (give it back). */
        boolean reserved(long n) {
            return reserved.compareAndSet(0, n);
        }

        /** Gives the reservation back, once. */
        void unreserve(InFlightBudget budget) {
            long n = reserved.getAndSet(-1);
            if (n > 0 && budget != null) {
                budget.release(n);
            }
        }
    }

    /** How the pipeline ended: the cause and whether the peer closed. */
    private static final class End extends RuntimeException {
        private static final long serialVersionUID = 1L;

        final transient CommException reason;
        final boolean peerClosed;

        End(CommException reason, boolean peerClosed) {
            super(null, null, false, false);
            this.reason = reason;
            this.peerClosed = peerClosed;
        }
    }

    @Override
    protected void receiveOne() {
        Incoming head;
        synchronized (pipeline) {
            fill();
            head = pipeline.peekFirst();
            // With no head yet and the pipeline not ended, receiving is held back (max-unclosed-bytes):
            // fill() delivers the next message it starts.
            headWanted = head != null || !pipelineEnded;
        }
        if (head == null) {
            // The pipeline ended and its last message was delivered (the end is already reported), or
            // receiving waits for memory.
            return;
        }
        head.done.whenComplete((m, err) -> deliverHead());
    }

    /** Memory came back: receives ahead again. */
    private void refill() {
        synchronized (pipeline) {
            fill();
        }
    }

    /** The head message completed: hands it to the reader side, then refills. */
    private void deliverHead() {
        Incoming head;
        synchronized (pipeline) {
            if (!headWanted) {
                return;
            }
            head = pipeline.pollFirst();
            headWanted = false;
            pipelineBytes -= head.bytes;
            fill();
        }
        head.unreserve(listenerBudget);
        Message m;
        try {
            m = head.done.join();
        } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
            Throwable t = e.getCause();
            if (t instanceof End end) {
                ended(end.reason, end.peerClosed);
            } else {
                lost(t);
            }
            return;
        }
        received(m);
    }

    /** With the pipeline's lock: posts the next header receive when there is room. */
    private void fill() {
        if (headerPosted
                || pipelineEnded
                || released
                || pipeline.size() >= PIPELINE_DEPTH
                || (pipelineBytes >= options.maxInFlight() && !pipeline.isEmpty())) {
            return;
        }
        // Receiving stops while received messages hold more than max-unclosed-bytes (the gate is
        // here, not in AbstractComm, so that messages already received ahead still reach the reader).
        if (!scopes.admit(options.maxUnclosedBytes(), this::refill)) {
            if (headWanted && pipeline.isEmpty()) {
                watchForLeak(scopes);
            }
            return;
        }
        Incoming in = new Incoming();
        boolean deliverWhenDone = headWanted && pipeline.isEmpty();
        pipeline.addLast(in);
        if (deliverWhenDone) {
            // The reader asked while receiving was held back: this is the message it waits for.
            in.done.whenComplete((m, err) -> deliverHead());
        }
        headerPosted = true;
        endpoint.worker()
                .tagRecvAsync(headerBuffer, myTag, -1L, endpoint)
                .whenComplete((info, err) -> onHeaderArrived(in, info, err));
    }

    private void onHeaderArrived(Incoming in, TagInfo info, Throwable err) {
        if (err != null) {
            stop(in, lostError(err), false);
            return;
        }
        try {
            onHeader(in, info);
        } catch (End e) {
            stop(in, e.reason, e.peerClosed);
        } catch (CommException e) {
            stop(in, e, false);
        } catch (RuntimeException e) {
            stop(in, readFailure(e), false);
        }
    }

    /** The header buffer is free again (the message's frames, if any, are posted): the next header may go. */
    private void headerDone(Incoming in, long bytes) {
        synchronized (pipeline) {
            headerPosted = false;
            in.bytes = bytes;
            pipelineBytes += bytes;
            fill();
        }
    }

    /**
     * No more messages after {@code in}: it fails with the end, and no header receive is posted again
     * ({@link #fill} checks {@code pipelineEnded} first, so a header receive still outstanding does
     * not matter).
     */
    private void stop(Incoming in, CommException cause, boolean peerClosed) {
        synchronized (pipeline) {
            pipelineEnded = true;
        }
        in.done.completeExceptionally(new End(cause, peerClosed));
    }

    /** A failure of this side while receiving a message (not the peer's fault, not a lost connection). */
    private CommException readFailure(RuntimeException e) {
        return new CommException("comm " + localAddress() + " <-> " + peerAddress() + ": " + e.getMessage(), e);
    }

    private CommClosedException lostError(Throwable err) {
        return new CommClosedException(
                "comm " + localAddress() + " <-> " + peerAddress() + " lost: " + Failures.describe(err), err);
    }

    private void lost(Throwable err) {
        if (released) {
            return;
        }
        ended(lostError(err), false);
    }

    private void onHeader(Incoming in, TagInfo info) {
        long len = info.length();
        if (len < WireFormat.HEADER_BYTES) {
            throw new CommProtocolException(
                    "header message of " + len + " bytes (at least " + WireFormat.HEADER_BYTES + ")");
        }
        WireFormat.Header h = WireFormat.readHeader(headerBuffer, 0, options.maxFrames());
        if (h.isClose()) {
            throw new End(
                    new CommClosedException(
                            "comm " + localAddress() + " <-> " + peerAddress() + " was closed by the peer"),
                    true);
        }
        long tableEnd = WireFormat.HEADER_BYTES + h.tableBytes();
        if (len == WireFormat.HEADER_BYTES && h.frameCount() > 0 && tableEnd > INLINE_LIMIT) {
            // A large table follows in a message of its own (bounded by max-frames); the next header
            // may only be posted once this message's frame receives are.
            Arena tableArena = Arena.ofShared();
            MemorySegment table = tableArena.allocate(h.tableBytes());
            endpoint.worker().tagRecvAsync(table, myTag, -1L, endpoint).whenComplete((ti, err) -> {
                try {
                    if (err != null) {
                        stop(in, lostError(err), false);
                    } else if (ti.length() != h.tableBytes()) {
                        stop(
                                in,
                                new CommProtocolException(
                                        "frame table of " + ti.length() + " bytes, header said " + h.tableBytes()),
                                false);
                    } else {
                        WireFormat.Table t = WireFormat.readTable(
                                table, 0, h.frameCount(), options.maxFrameSize(), options.maxMessageSize());
                        receiveFrames(in, h, t, -1);
                    }
                } catch (CommException e) {
                    stop(in, e, false);
                } catch (RuntimeException e) { // e.g. the frame allocator refused: fail the read, never lose it
                    stop(in, readFailure(e), false);
                } finally {
                    tableArena.close();
                }
            });
            return;
        }
        if (len < tableEnd) {
            throw new CommProtocolException(
                    "header message of " + len + " bytes for " + h.frameCount() + " frames (needs " + tableEnd + ")");
        }
        WireFormat.Table t = WireFormat.readTable(
                headerBuffer,
                WireFormat.HEADER_BYTES,
                h.frameCount(),
                options.maxFrameSize(),
                options.maxMessageSize());
        if ((h.flags() & WireFormat.FLAG_INLINE) != 0) {
            if (len != tableEnd + t.total()) {
                throw new CommProtocolException(
                        "inline message of " + len + " bytes, header says " + (tableEnd + t.total()));
            }
            receiveFrames(in, h, t, tableEnd);
        } else {
            if (len != tableEnd) {
                throw new CommProtocolException("header message of " + len + " bytes, expected " + tableEnd);
            }
            receiveFrames(in, h, t, -1);
        }
    }

    /**
     * Receives a message's frames once the listener's budget has room for them (inline frames, already
     * here, and clients' comms need none). While they wait, no later header is received either: the
     * frames' receives must be posted before the next header's, since they share the tag.
     */
    private void receiveFrames(Incoming in, WireFormat.Header h, WireFormat.Table t, long inlineAt) {
        long total = t.total();
        if (listenerBudget == null || inlineAt >= 0 || total == 0) {
            receiveFramesNow(in, h, t, inlineAt);
            return;
        }
        listenerBudget.reserve(total, () -> {
            if (released || !in.reserved(total)) { // dropped while waiting
                listenerBudget.release(total);
                in.unreserve(listenerBudget);
                return;
            }
            try {
                receiveFramesNow(in, h, t, -1);
            } catch (CommException e) {
                stop(in, e, false);
            } catch (RuntimeException e) {
                stop(in, readFailure(e), false);
            }
        });
    }

    /**
     * Allocates the frames and fills them: from the header buffer at {@code inlineAt}, or by receives;
     * then lets the next header receive go.
     */
    private void receiveFramesNow(Incoming in, WireFormat.Header h, WireFormat.Table t, long inlineAt) {
        Arena scope = scopes.forMessage(t.total(), h.frameCount());
        List<Frame> frames = new ArrayList<>(h.frameCount());
        List<MemorySegment> toReceive = new ArrayList<>();
        long expected = 0;
        try {
            long at = inlineAt;
            boolean multi = (h.flags() & WireFormat.FLAG_MULTI_BUFFER) != 0;
            for (int i = 0; i < h.frameCount(); i++) {
                if (multi && t.kinds()[i] != MemoryKind.HOST) {
                    // One scatter-gather receive wants one memory type; our writers never mix them there.
                    throw new CommProtocolException("multi-buffer frame " + i + " is " + t.kinds()[i] + " memory");
                }
                MemorySegment seg = options.allocator().allocate(t.kinds()[i], t.sizes()[i], scope);
                if (seg.byteSize() != t.sizes()[i]) {
                    throw new CommException(
                            "the frame allocator returned " + seg.byteSize() + " bytes for a frame of " + t.sizes()[i]);
                }
                frames.add(new Frame(seg, t.kinds()[i]));
                if (inlineAt >= 0) {
                    if (t.kinds()[i] != MemoryKind.HOST) {
                        throw new CommProtocolException("inline frame " + i + " is " + t.kinds()[i] + " memory");
                    }
                    MemorySegment.copy(headerBuffer, at, seg, 0, t.sizes()[i]);
                    at += t.sizes()[i];
                } else if (t.sizes()[i] > 0) {
                    toReceive.add(seg);
                    expected += t.sizes()[i];
                }
            }
        } catch (RuntimeException e) {
            scope.close();
            throw e;
        }
        if (toReceive.isEmpty()) {
            headerDone(in, 0);
            in.done.complete(Message.received(frames, scope));
            return;
        }
        CompletableFuture<?> all;
        long total = expected;
        if ((h.flags() & WireFormat.FLAG_MULTI_BUFFER) != 0) {
            all = endpoint.worker()
                    .tagRecvAsync(toReceive, myTag, -1L, endpoint)
                    .thenAccept(ti -> checkLength(ti, total, "multi-buffer frames"));
        } else {
            CompletableFuture<?>[] each = new CompletableFuture<?>[toReceive.size()];
            for (int i = 0; i < each.length; i++) {
                long size = toReceive.get(i).byteSize();
                int index = i;
                each[i] = endpoint.worker()
                        .tagRecvAsync(toReceive.get(i), myTag, -1L, endpoint)
                        .thenAccept(ti -> checkLength(ti, size, "frame " + index));
            }
            all = CompletableFuture.allOf(each);
        }
        headerDone(in, total);
        all.whenComplete((v, err) -> {
            if (err != null) {
                scope.close();
                Throwable cause = Failures.unchecked(err);
                stop(in, cause instanceof CommProtocolException p ? p : lostError(cause), false);
            } else {
                in.done.complete(Message.received(frames, scope));
            }
        });
    }

    private static void checkLength(TagInfo ti, long expected, String what) {
        if (ti.length() != expected) {
            throw new CommProtocolException(what + ": received " + ti.length() + " bytes, the header said " + expected);
        }
    }

    // ------------------------------------------------------------------ sending

    @Override
    protected CompletableFuture<Void> send(Message message, boolean callerWaits) {
        List<Frame> frames = message.frames();
        int n = frames.size();
        long tableEnd = WireFormat.HEADER_BYTES + (long) n * WireFormat.ENTRY_BYTES;
        long payload = message.byteSize();
        boolean allHost = frames.stream().allMatch(f -> f.kind() == MemoryKind.HOST);
        boolean inline = allHost && tableEnd + payload <= INLINE_LIMIT;
        // UCX's iov datatype wants one memory type for all its parts: mixed messages go frame by frame.
        boolean multi = !inline && options.multiBuffer() && allHost;
        int flags = inline ? WireFormat.FLAG_INLINE : multi ? WireFormat.FLAG_MULTI_BUFFER : 0;
        boolean tableApart = !inline && tableEnd > INLINE_LIMIT;
        // Heap memory: UCX needs native memory, and the endpoint copies heap segments itself.
        byte[] head = new byte[(int) (tableApart ? WireFormat.HEADER_BYTES : inline ? tableEnd + payload : tableEnd)];
        MemorySegment hs = MemorySegment.ofArray(head);
        WireFormat.writeHeader(hs, 0, WireFormat.TYPE_MESSAGE, flags, n);
        MemorySegment table = hs;
        long tableAt = WireFormat.HEADER_BYTES;
        if (tableApart) {
            table = MemorySegment.ofArray(new byte[(int) (tableEnd - WireFormat.HEADER_BYTES)]);
            tableAt = 0;
        }
        WireFormat.writeTable(table, tableAt, frames);
        if (inline) {
            long at = tableEnd;
            for (Frame f : frames) {
                MemorySegment.copy(f.segment(), 0, hs, at, f.size());
                at += f.size();
            }
        }
        List<CompletableFuture<Void>> sends = new ArrayList<>(inline ? 1 : n + 2);
        synchronized (sendLock) {
            if (released) {
                return CompletableFuture.failedFuture(closedError("write to"));
            }
            sending++;
            sends.add(endpoint.tagSendAsync(hs, peerTag));
            if (tableApart) {
                sends.add(endpoint.tagSendAsync(table, peerTag));
            }
            if (!inline) {
                if (multi) {
                    List<MemorySegment> segs = new ArrayList<>(n);
                    for (Frame f : frames) {
                        if (f.size() > 0) {
                            segs.add(f.segment());
                        }
                    }
                    if (!segs.isEmpty()) {
                        sends.add(endpoint.tagSendAsync(segs, peerTag));
                    }
                } else {
                    for (Frame f : frames) {
                        if (f.size() > 0) {
                            sends.add(endpoint.tagSendAsync(f.segment(), peerTag));
                        }
                    }
                }
            }
        }
        CompletableFuture<Void> done =
                sends.size() == 1 ? sends.get(0) : CompletableFuture.allOf(sends.toArray(CompletableFuture<?>[]::new));
        return done.handle((v, err) -> {
            sent();
            if (err != null) {
                if (isClosed()) {
                    // Canceled by the close (the peer's, or ours): say why the comm closed.
                    CommClosedException e = closedError("write to");
                    failed(e);
                    throw e;
                }
                CommClosedException e = new CommClosedException(
                        "comm " + localAddress() + " <-> " + peerAddress() + " lost while writing: "
                                + Failures.describe(err),
                        Failures.unchecked(err));
                failed(e);
                throw e;
            }
            return null;
        });
    }

    @Override
    protected CompletableFuture<Void> sendClose() {
        byte[] head = new byte[WireFormat.HEADER_BYTES];
        WireFormat.writeHeader(MemorySegment.ofArray(head), 0, WireFormat.TYPE_CLOSE, 0, 0);
        CompletableFuture<Void> marker;
        CompletableFuture<Void> before;
        synchronized (sendLock) {
            if (released) {
                return CompletableFuture.failedFuture(closedError("close"));
            }
            marker = endpoint.tagSendAsync(head, peerTag);
            closeSent = true;
            drained = new CompletableFuture<>();
            before = drained;
            if (sending == 0) {
                drained.complete(null);
            }
        }
        return CompletableFuture.allOf(marker, before).thenCompose(v -> endpoint.flushAsync());
    }

    /** A message's sends completed (or failed). */
    private void sent() {
        CompletableFuture<Void> d = null;
        synchronized (sendLock) {
            if (--sending == 0 && drained != null) {
                d = drained;
            }
        }
        if (d != null) {
            d.complete(null);
        }
    }

    // ------------------------------------------------------------------ the rest

    @Override
    protected <T> T await(CompletableFuture<T> future, long timeoutNanos) throws TimeoutException {
        if (timeoutNanos < 0) {
            return worker.await(future);
        }
        try {
            return worker.await(future, Duration.ofNanos(timeoutNanos));
        } catch (UcxTimeoutException e) {
            if (future.isDone()) {
                return worker.await(future);
            }
            throw new TimeoutException();
        }
    }

    /**
     * After this side's close marker left, the endpoint stays until the peer has read the marker and
     * closed its side (its disconnect ends this one), or until the linger time: closing at once would
     * make UCX drop messages still waiting in the peer's unexpected queue.
     */
    @Override
    protected void release(boolean graceful) {
        dropPipeline();
        CloseMode mode;
        synchronized (sendLock) {
            if (released) {
                return;
            }
            released = true;
            if (graceful && closeSent) {
                if (runtime.lingering(this)) {
                    lingering = true;
                    CommTimers.after(linger(), this::endLinger);
                    return;
                }
            }
            // The peer's close marker came while messages of ours were still in flight: the peer reads
            // nothing after its close, so they can never complete (UCX would wait for receives that
            // never come); a forced close fails them now instead of after the close timeout.
            mode = graceful && sending == 0 ? CloseMode.FLUSH : CloseMode.FORCE;
        }
        closeEndpoint(mode);
    }

    /** Frees messages received ahead that no reader will get; ones still arriving are freed when they do. */
    private void dropPipeline() {
        List<Incoming> dropped;
        synchronized (pipeline) {
            pipelineEnded = true;
            dropped = new ArrayList<>(pipeline);
            pipeline.clear();
            headWanted = false;
        }
        for (Incoming in : dropped) {
            in.unreserve(listenerBudget);
            in.done.thenAccept(Message::close);
        }
    }

    private Duration linger() {
        Duration t = options.closeTimeout();
        return t.compareTo(Duration.ofSeconds(30)) > 0 ? t : Duration.ofSeconds(30);
    }

    @Override
    protected void afterEnd() {
        if (lingering) {
            closeEndpoint(CloseMode.FORCE);
        }
    }

    /**
     * Ends this closed comm's linger now: its endpoint closes by force. The linger time is up, or the
     * comm context is closing (its owner is done: what the peer has not read yet is dropped).
     */
    void endLinger() {
        closeEndpoint(CloseMode.FORCE);
    }

    private void closeEndpoint(CloseMode mode) {
        synchronized (sendLock) {
            if (endpointClosed) {
                return;
            }
            endpointClosed = true;
        }
        try {
            endpoint.closeAsync(mode).whenComplete((v, e) -> {
                TcpTransport.closeQuietly(control);
                finish();
            });
        } catch (RuntimeException e) {
            TcpTransport.closeQuietly(control);
            finish();
        }
    }

    private void finish() {
        // The header buffer may be the target of a receive until the endpoint is closed.
        CommTimers.elsewhere(() -> {
            headerArena.close();
            runtime.releaseTag(myTag);
            runtime.notLingering(this);
            runtime.release();
        });
    }

    long myTag() {
        return myTag;
    }
}
