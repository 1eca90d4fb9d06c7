package org.ucx4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;

/**
 * A connection to one peer ({@code ucp_ep_h}): tag and stream messages, flush, close.
 *
 * <p>Every operation has an asynchronous form ({@code ...Async}, returning a {@link UcxFuture}) and a
 * blocking twin that waits for it (safe on virtual threads; refused inside ucx4j callbacks).
 *
 * <p>Memory: a native {@link MemorySegment} (or a direct {@link ByteBuffer}) is used in place, zero-copy;
 * it must stay alive and unmodified until the future completes. Heap memory ({@code byte[]}, heap
 * buffers, heap segments) is copied into native memory first, and for receives copied back on completion.
 *
 * <p>Errors: peer error handling is on. When the peer dies or the connection breaks, every pending
 * operation on this endpoint fails with {@link UcxConnectionResetException} (or
 * {@link UcxTimeoutException} for a keep-alive timeout), the {@link EndpointErrorHandler} runs, and the
 * endpoint closes itself. Receives posted through this endpoint are tied to it for that purpose (UCX
 * matches tag receives per worker: give each peer its own tags).
 *
 * <p>Ownership: owned by its worker (closed with it) and by the caller. {@link #close()} is idempotent;
 * operations after close throw {@link IllegalStateException}.
 *
 * <p>Threading: safe from any thread.
 */
public final class UcxEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxEndpoint.class);
    private static final int STREAM_RECV_FLAG_WAITALL = 1;
    private static final int CLOSE_FLAG_FORCE = 1;

    private enum State { OPEN, FAILED, CLOSING, CLOSED }

    final WorkerRuntime rt;
    final MemorySegment handle;
    final int id;
    private final InetSocketAddress peer;
    private final EndpointErrorHandler errorHandler;
    private volatile State state = State.OPEN;
    private volatile UcxException failure;
    private UcxFuture<Void> closeFuture;
    private Operation opsHead;
    /** Simple-channel messages that arrived before anyone asked, and receivers waiting for one (lock held). */
    private final java.util.ArrayDeque<AmMessage> simpleArrived = new java.util.ArrayDeque<>();
    private final java.util.ArrayDeque<UcxFuture<MemorySegment>> simpleWaiting = new java.util.ArrayDeque<>();

    UcxEndpoint(WorkerRuntime rt, MemorySegment handle, int id, InetSocketAddress peer, EndpointErrorHandler handler) {
        this.rt = rt;
        this.handle = handle;
        this.id = id;
        this.peer = peer;
        this.errorHandler = handler;
    }

    // ------------------------------------------------------------------ tag

    /**
     * Sends a tagged message.
     *
     * @param buffer the payload (see the class comment about memory)
     * @param tag the 64-bit tag
     * @return completes when the buffer may be reused
     */
    public UcxFuture<Void> tagSendAsync(MemorySegment buffer, long tag) {
        UcxFuture<Void> f = new UcxFuture<>();
        Operation op = new Operation(rt, OperationKind.TAG_SEND, this, buffer.byteSize(), f);
        ensureOpen();
        MemorySegment src = Buffers.forSend(op, buffer);
        long len = buffer.byteSize();
        rt.startOp(op, false, Upcalls.SEND, 0, 0, p -> (MemorySegment) Ucp.tag_send_nbx.invokeExact(handle, src, len, tag, p));
        return f;
    }

    /** Blocking twin of {@link #tagSendAsync(MemorySegment, long)}. */
    public void tagSend(MemorySegment buffer, long tag) {
        rt.call(() -> tagSendAsync(buffer, tag), "tagSend");
    }

    /** Sends a tagged message from a byte array (copied). */
    public UcxFuture<Void> tagSendAsync(byte[] data, long tag) {
        return tagSendAsync(MemorySegment.ofArray(data), tag);
    }

    /** Blocking twin of {@link #tagSendAsync(byte[], long)}. */
    public void tagSend(byte[] data, long tag) {
        tagSend(MemorySegment.ofArray(data), tag);
    }

    /** Sends the bytes between a buffer's position and limit (direct buffers zero-copy, heap copied). */
    public UcxFuture<Void> tagSendAsync(ByteBuffer data, long tag) {
        return tagSendAsync(MemorySegment.ofBuffer(data), tag);
    }

    /** Blocking twin of {@link #tagSendAsync(ByteBuffer, long)}. */
    public void tagSend(ByteBuffer data, long tag) {
        tagSend(MemorySegment.ofBuffer(data), tag);
    }

    /**
     * Sends several segments as one tagged message (a UCX scatter-gather send): the receiver sees one
     * message of their total length, whatever way it receives it. Empty segments are allowed.
     *
     * @param segments the parts, in order (native in place; heap parts copied)
     * @param tag the 64-bit tag
     * @return completes when the segments may be reused
     */
    public UcxFuture<Void> tagSendAsync(java.util.List<MemorySegment> segments, long tag) {
        UcxFuture<Void> f = new UcxFuture<>();
        ensureOpen();
        Operation op = new Operation(rt, OperationKind.TAG_SEND_IOV, this, Iov.total(segments), f);
        MemorySegment list = Iov.forSend(op, segments);
        long count = segments.size();
        rt.startOp(op, true, Upcalls.SEND, 0, 0, p -> (MemorySegment) Ucp.tag_send_nbx.invokeExact(handle, list, count, tag, p));
        return f;
    }

    /** Blocking twin of {@link #tagSendAsync(java.util.List, long)}. */
    public void tagSend(java.util.List<MemorySegment> segments, long tag) {
        rt.call(() -> tagSendAsync(segments, tag), "tagSend");
    }

    /**
     * Receives one tagged message into several native segments in order (a scatter receive), tied to
     * this endpoint like {@link #tagRecvAsync(MemorySegment, long, long)}.
     *
     * @param segments where to receive, in order; their total is the largest message accepted
     * @param tag the tag to match
     * @param mask which bits must match
     * @return the sender's tag and the total length received
     */
    public UcxFuture<TagInfo> tagRecvAsync(java.util.List<MemorySegment> segments, long tag, long mask) {
        ensureOpen();
        return rt.worker.tagRecvIov(this, segments, tag, mask);
    }

    /**
     * Receives a tagged message whose tag matches {@code tag} on the bits set in {@code mask}, tied to this
     * endpoint: it fails if this endpoint fails and is canceled if it closes. Matching itself is per worker.
     *
     * @param buffer where to receive; a longer message fails with {@code MESSAGE_TRUNCATED}
     * @param tag the tag to match
     * @param mask which bits of the tag must match ({@code -1L} for all)
     * @return the sender's tag and the message length
     */
    public UcxFuture<TagInfo> tagRecvAsync(MemorySegment buffer, long tag, long mask) {
        ensureOpen();
        return rt.worker.tagRecv(this, buffer, tag, mask);
    }

    /** Blocking twin of {@link #tagRecvAsync(MemorySegment, long, long)}. */
    public TagInfo tagRecv(MemorySegment buffer, long tag, long mask) {
        return rt.call(() -> tagRecvAsync(buffer, tag, mask), "tagRecv");
    }

    /**
     * Like {@link #tagRecv(MemorySegment, long, long)} with a time limit; on timeout the receive is
     * canceled and {@link UcxTimeoutException} thrown.
     */
    public TagInfo tagRecv(MemorySegment buffer, long tag, long mask, Duration timeout) {
        return rt.worker.awaitOrCancel(() -> tagRecvAsync(buffer, tag, mask), "tagRecv", timeout);
    }

    /** Receives into a byte array (copied back on completion). */
    public UcxFuture<TagInfo> tagRecvAsync(byte[] data, long tag, long mask) {
        return tagRecvAsync(MemorySegment.ofArray(data), tag, mask);
    }

    /** Blocking twin of {@link #tagRecvAsync(byte[], long, long)}. */
    public TagInfo tagRecv(byte[] data, long tag, long mask) {
        return tagRecv(MemorySegment.ofArray(data), tag, mask);
    }

    // ------------------------------------------------------------------ stream

    /**
     * Sends bytes on the endpoint's ordered byte stream. An empty buffer completes at once without
     * touching the network (a stream has no message boundaries).
     *
     * @param buffer the bytes
     * @return completes when the buffer may be reused
     */
    public UcxFuture<Void> streamSendAsync(MemorySegment buffer) {
        UcxFuture<Void> f = new UcxFuture<>();
        if (buffer.byteSize() == 0) {
            // A stream has no message boundaries, so an empty send is a no-op; UCX 1.13 also asserts on
            // receiving an empty stream fragment, so it must not reach the wire.
            ensureOpen();
            f.complete(null);
            return f;
        }
        Operation op = new Operation(rt, OperationKind.STREAM_SEND, this, buffer.byteSize(), f);
        ensureOpen();
        MemorySegment src = Buffers.forSend(op, buffer);
        long len = buffer.byteSize();
        rt.startOp(op, false, Upcalls.SEND, 0, 0, p -> (MemorySegment) Ucp.stream_send_nbx.invokeExact(handle, src, len, p));
        return f;
    }

    /** Blocking twin of {@link #streamSendAsync(MemorySegment)}. */
    public void streamSend(MemorySegment buffer) {
        rt.call(() -> streamSendAsync(buffer), "streamSend");
    }

    /** Sends a byte array on the stream (copied). */
    public UcxFuture<Void> streamSendAsync(byte[] data) {
        return streamSendAsync(MemorySegment.ofArray(data));
    }

    /** Blocking twin of {@link #streamSendAsync(byte[])}. */
    public void streamSend(byte[] data) {
        streamSend(MemorySegment.ofArray(data));
    }

    /**
     * Receives exactly {@code buffer.byteSize()} bytes from the stream.
     *
     * @param buffer where to receive
     * @return the number of bytes received (the buffer's size)
     */
    public UcxFuture<Long> streamRecvAsync(MemorySegment buffer) {
        UcxFuture<Long> f = new UcxFuture<>();
        if (buffer.byteSize() == 0) {
            ensureOpen();
            f.complete(0L);
            return f;
        }
        Operation op = new Operation(rt, OperationKind.STREAM_RECV, this, buffer.byteSize(), f);
        ensureOpen();
        MemorySegment dst = Buffers.forReceive(op, buffer);
        long len = buffer.byteSize();
        rt.startOp(op, false, Upcalls.STREAM_RECV, WorkerRuntime.OP_ATTR_FIELD_FLAGS, STREAM_RECV_FLAG_WAITALL,
                p -> (MemorySegment) Ucp.stream_recv_nbx.invokeExact(handle, dst, len, rt.lengthOut, p));
        return f;
    }

    /** Blocking twin of {@link #streamRecvAsync(MemorySegment)}. */
    public long streamRecv(MemorySegment buffer) {
        return rt.call(() -> streamRecvAsync(buffer), "streamRecv");
    }

    /** Receives exactly {@code data.length} bytes into a byte array (copied back). */
    public UcxFuture<Long> streamRecvAsync(byte[] data) {
        return streamRecvAsync(MemorySegment.ofArray(data));
    }

    /** Blocking twin of {@link #streamRecvAsync(byte[])}. */
    public long streamRecv(byte[] data) {
        return streamRecv(MemorySegment.ofArray(data));
    }

    // ------------------------------------------------------------------ active messages

    /**
     * Sends an active message: the receiver's handler for {@code id} gets the header and the body, with
     * no receive posted in advance.
     *
     * @param id the handler id, 0 .. 65534
     * @param header the user header (copied; at most {@link UcxWorker#maxAmHeader()} bytes)
     * @param body the body (see the class comment about memory)
     * @param mode eager, rendezvous, or let UCX choose
     * @return completes when the body may be reused
     * @throws IllegalArgumentException when the header is larger than the worker allows (before anything is sent)
     */
    public UcxFuture<Void> amSendAsync(int id, MemorySegment header, MemorySegment body, AmSendMode mode) {
        rt.worker.checkAmId(id);
        return startAmSend(id, header, body, null, mode);
    }

    /**
     * Sends an active message whose body is several segments, gathered by UCX (a scatter-gather send).
     *
     * @param id the handler id, 0 .. 65534
     * @param header the user header (copied)
     * @param body the body parts, in order
     * @param mode eager, rendezvous, or let UCX choose
     * @return completes when the parts may be reused
     */
    public UcxFuture<Void> amSendAsync(int id, MemorySegment header, java.util.List<MemorySegment> body, AmSendMode mode) {
        rt.worker.checkAmId(id);
        return startAmSend(id, header, null, body, mode);
    }

    /** Blocking twin of {@link #amSendAsync(int, MemorySegment, MemorySegment, AmSendMode)}. */
    public void amSend(int id, MemorySegment header, MemorySegment body, AmSendMode mode) {
        rt.call(() -> amSendAsync(id, header, body, mode), "amSend");
    }

    /**
     * Sends {@code body} on this endpoint's simple active-message channel: the peer receives it with
     * {@link #amRecvAsync()} on its endpoint to us, needing no size in advance (like UCXX's
     * {@code am_send}/{@code am_recv}).
     *
     * @param body the bytes
     * @return completes when the body may be reused
     */
    public UcxFuture<Void> amSendAsync(MemorySegment body) {
        return startAmSend(ActiveMessages.SIMPLE_ID, MemorySegment.NULL, body, null, AmSendMode.AUTO);
    }

    /**
     * Sends {@code body}, memory of the given kind, on this endpoint's simple active-message channel: the
     * peer's worker receives it into memory from its allocator for that kind
     * ({@link UcxWorker#setAmAllocator(MemoryKind, AmAllocator)}), as UCXX's {@code am_send} of a CUDA
     * buffer. A one-byte header carries the kind; host bodies carry none.
     *
     * @param body the bytes (device memory for {@link MemoryKind#CUDA})
     * @param kind the kind of {@code body}'s memory
     * @return completes when the body may be reused
     */
    public UcxFuture<Void> amSendAsync(MemorySegment body, MemoryKind kind) {
        if (kind == MemoryKind.HOST) {
            return amSendAsync(body);
        }
        MemorySegment header = MemorySegment.ofArray(new byte[] {(byte) kind.wireCode()});
        return startAmSend(ActiveMessages.SIMPLE_ID, header, body, null, AmSendMode.AUTO);
    }

    /** Blocking twin of {@link #amSendAsync(MemorySegment)}. */
    public void amSend(MemorySegment body) {
        rt.call(() -> amSendAsync(body), "amSend");
    }

    /** Sends a byte array on the simple channel (copied). */
    public UcxFuture<Void> amSendAsync(byte[] body) {
        return amSendAsync(MemorySegment.ofArray(body));
    }

    /**
     * Receives the next message of the simple channel from this endpoint's peer, in order. Messages that
     * arrive before anyone asks are kept. The body is in memory from the worker's {@link AmAllocator}.
     * Fails with the endpoint's failure if it fails, and as canceled if it closes.
     *
     * @return the body's future
     */
    public UcxFuture<MemorySegment> amRecvAsync() {
        ensureOpen();
        UcxFuture<MemorySegment> f = new UcxFuture<>();
        rt.execute(() -> {
            if (state == State.FAILED) {
                f.completeExceptionally(failure);
                return;
            }
            AmMessage next = simpleArrived.poll();
            if (next != null) {
                chain(next.data(), f);
            } else {
                simpleWaiting.add(f);
            }
        });
        return f;
    }

    /** Blocking twin of {@link #amRecvAsync()}. */
    public MemorySegment amRecv() {
        return rt.call(this::amRecvAsync, "amRecv");
    }

    private UcxFuture<Void> startAmSend(int id, MemorySegment header, MemorySegment body,
                                        java.util.List<MemorySegment> parts, AmSendMode mode) {
        Objects.requireNonNull(header, "header");
        Objects.requireNonNull(mode, "mode");
        long hlen = header.byteSize();
        if (hlen > rt.worker.maxAmHeader()) {
            throw new IllegalArgumentException("active message header of " + hlen + " bytes exceeds this worker's "
                    + "maximum of " + rt.worker.maxAmHeader() + " bytes");
        }
        ensureOpen();
        UcxFuture<Void> f = new UcxFuture<>();
        long bodyLength = parts != null ? Iov.total(parts) : Objects.requireNonNull(body, "body").byteSize();
        Operation op = new Operation(rt, OperationKind.AM_SEND, this, bodyLength, f);
        MemorySegment src;
        long count;
        MemorySegment hdr = MemorySegment.NULL;
        try {
            if (hlen > 0) {
                op.headerStaging = org.ucx4j.internal.Libc.malloc(hlen);
                MemorySegment.copy(header, 0, op.headerStaging, 0, hlen);
                hdr = MemorySegment.ofAddress(op.headerStaging.address());
            }
            src = parts != null ? Iov.forSend(op, parts) : Buffers.forSend(op, body);
            count = parts != null ? parts.size() : bodyLength;
        } catch (RuntimeException e) {
            if (op.headerStaging != null) {
                org.ucx4j.internal.Libc.free(op.headerStaging);
                op.headerStaging = null;
            }
            throw e;
        }
        MemorySegment hdrPtr = hdr;
        int flags = ActiveMessages.SEND_FLAG_REPLY | mode.flag();
        boolean iov = parts != null;
        rt.startOp(op, iov, Upcalls.SEND, WorkerRuntime.OP_ATTR_FIELD_FLAGS, flags,
                p -> (MemorySegment) Ucp.am_send_nbx.invokeExact(handle, id, hdrPtr, hlen, src, count, p));
        return f;
    }

    /** Lock held: a simple-channel message from our peer arrived. */
    void deliverSimple(AmMessage message) {
        UcxFuture<MemorySegment> waiting = simpleWaiting.poll();
        if (waiting != null) {
            chain(message.data(), waiting);
        } else {
            simpleArrived.add(message);
        }
    }

    private static void chain(UcxFuture<MemorySegment> from, UcxFuture<MemorySegment> to) {
        from.whenComplete((v, e) -> {
            if (e != null) {
                to.completeExceptionally(e);
            } else {
                to.complete(v);
            }
        });
    }

    /** Lock held: fails every waiting simple-channel receive. */
    private void failSimpleWaiters(UcxException why) {
        UcxFuture<MemorySegment> w;
        while ((w = simpleWaiting.poll()) != null) {
            w.completeExceptionally(why);
        }
    }

    // ------------------------------------------------------------------ flush and close

    /**
     * Completes when everything sent so far on this endpoint has completed (locally and, for RMA, remotely).
     *
     * @return the flush's future
     */
    public UcxFuture<Void> flushAsync() {
        ensureOpen();
        UcxFuture<Void> f = new UcxFuture<>();
        Operation op = new Operation(rt, OperationKind.ENDPOINT_FLUSH, this, 0, f);
        rt.submit(op, () -> startFlush(op));
        return f;
    }

    void startFlush(Operation op) {
        if (!usable(op)) {
            return;
        }
        MemorySegment p = rt.param(op, Upcalls.SEND, 0, 0);
        MemorySegment r;
        try {
            r = (MemorySegment) Ucp.ep_flush_nbx.invokeExact(handle, p);
        } catch (Throwable t) {
            rt.failUnsubmitted(op, t);
            return;
        }
        rt.started(op, r, null);
    }

    /** Blocking twin of {@link #flushAsync()}. */
    public void flush() {
        rt.call(() -> flushAsync(), "flush");
    }

    /**
     * Closes the endpoint. Receives posted through it complete with {@link UcxCanceledException}. In
     * {@link CloseMode#FLUSH} mode sends already posted are delivered first; in {@link CloseMode#FORCE}
     * mode they complete as canceled. A failed endpoint always closes by force. Calling it again returns
     * the same future.
     *
     * @param mode graceful or forced
     * @return completes when UCX has released the endpoint (or exceptionally after the worker's close
     *     timeout)
     */
    public UcxFuture<Void> closeAsync(CloseMode mode) {
        Objects.requireNonNull(mode, "mode");
        UcxFuture<Void> f = new UcxFuture<>();
        rt.execute(() -> startClose(mode, f));
        return f;
    }

    /** Starts a close, or ties {@code f} to the close already under way; lock held. */
    void startClose(CloseMode requested, UcxFuture<Void> f) {
        if (rt.inUpcall()) {
            rt.later(() -> startClose(requested, f));
            return;
        }
        if (closeFuture != null) {
            closeFuture.whenComplete((v, e) -> {
                if (e != null) {
                    f.completeExceptionally(e);
                } else {
                    f.complete(null);
                }
            });
            return;
        }
        closeFuture = f;
        CloseMode mode = state == State.FAILED ? CloseMode.FORCE : requested;
        state = State.CLOSING;
        UcxCanceledException closed = new UcxCanceledException("endpoint close", "endpoint to " + describePeer() + " closed");
        failSimpleWaiters(closed);
        for (Operation op : operations()) {
            if (mode == CloseMode.FORCE || op.kind.awaitsPeer) {
                rt.abort(op, closed);
            }
        }
        closeRemoteKeys();
        // UCX's close completes 'released'; the bookkeeping runs first, then 'f', so whoever waits on
        // the close sees the endpoint already gone from the worker.
        UcxFuture<Void> released = new UcxFuture<>();
        Operation op = new Operation(rt, OperationKind.ENDPOINT_CLOSE, null, 0, released);
        MemorySegment p = rt.param(op, Upcalls.SEND, WorkerRuntime.OP_ATTR_FIELD_FLAGS,
                mode == CloseMode.FORCE ? CLOSE_FLAG_FORCE : 0);
        MemorySegment r;
        try {
            r = (MemorySegment) Ucp.ep_close_nbx.invokeExact(handle, p);
        } catch (Throwable t) {
            rt.failUnsubmitted(op, t);
            r = null;
        }
        WorkerRuntime.Timer guard = rt.schedule(rt.worker.options().closeTimeout().toNanos(), () -> {
            if (!f.isDone()) {
                f.completeExceptionally(new UcxTimeoutException("ucp_ep_close_nbx", UcxStatus.TIMED_OUT.code(),
                        "endpoint to " + describePeer() + " did not close within " + rt.worker.options().closeTimeout()));
            }
        });
        released.whenComplete((v, e) -> {
            guard.cancel();
            state = State.CLOSED;
            rt.worker.endpointClosed(this);
            if (e != null) {
                f.completeExceptionally(e);
            } else {
                f.complete(null);
            }
        });
        if (r != null) {
            rt.started(op, r, null);
        }
    }

    /**
     * Closes gracefully ({@link CloseMode#FLUSH}) and waits up to the worker's close timeout. Never throws
     * for a peer that is already gone; idempotent.
     */
    @Override
    public void close() {
        UcxFuture<Void> f = closeAsync(CloseMode.FLUSH);
        if (rt.inCallbackContext()) {
            return; // Cannot wait here; the close proceeds on its own.
        }
        try {
            rt.await(f, "close");
        } catch (UcxException e) {
            LOG.debug("endpoint to {} closed with {}", describePeer(), e.toString());
        }
    }

    // ------------------------------------------------------------------ state

    /**
     * The peer's socket address (for endpoints made by {@link UcxWorker#connect} or accepted by a listener).
     *
     * @return the address, or empty when the endpoint was made without one
     */
    public Optional<InetSocketAddress> peer() {
        return Optional.ofNullable(peer);
    }

    /**
     * Whether the endpoint is open and has not failed.
     *
     * @return true while usable
     */
    public boolean isOpen() {
        return state == State.OPEN;
    }

    /**
     * Why the endpoint failed.
     *
     * @return the failure, or empty when it has not failed
     */
    public Optional<UcxException> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * The worker this endpoint belongs to.
     *
     * @return the worker
     */
    public UcxWorker worker() {
        return rt.worker;
    }

    String describePeer() {
        return peer == null ? "(worker address)" : peer.getAddress().getHostAddress() + ":" + peer.getPort();
    }

    /**
     * Refuses new operations on a closed endpoint: an {@link IllegalStateException} when the caller closed
     * it, the endpoint's failure (a {@link UcxException}, fresh for this caller) when the peer broke it,
     * since the caller needs to know the peer is gone, not that someone called close.
     */
    private void ensureOpen() {
        UcxException failed = failure;
        if (failed != null) {
            throw UcxException.of(failed.call(), failed.rawStatus(),
                    "endpoint to " + describePeer() + " failed earlier: " + failed.getMessage());
        }
        State s = state;
        if (s == State.CLOSING || s == State.CLOSED) {
            throw new IllegalStateException("endpoint to " + describePeer() + " is closed");
        }
        rt.worker.ensureOpen();
    }

    /** Checks, with the lock held, that an operation may start; fails it otherwise. */
    boolean usable(Operation op) {
        State s = state;
        if (s == State.OPEN) {
            return true;
        }
        Throwable why = failure != null ? failure
                : new IllegalStateException("endpoint to " + describePeer() + " is closed");
        rt.failUnsubmitted(op, why);
        return false;
    }

    /**
     * Called with the lock held, from inside UCX's error callback, when this endpoint failed. Only the
     * state changes here; aborting operations, the user's handler and the forced close run in the next
     * round, outside the callback, because UCX is still tearing the endpoint down.
     */
    void failed(int status) {
        if (state == State.CLOSED) {
            return;
        }
        UcxException error = UcxException.of("endpoint", status, "peer " + describePeer());
        boolean closing = state == State.CLOSING;
        if (failure == null && !closing) {
            // Only a failure of an open endpoint is the peer's doing; during our own close it is expected.
            failure = error;
        }
        if (!closing) {
            state = State.FAILED;
        }
        rt.later(() -> afterFailure(error, closing));
    }

    private void afterFailure(UcxException error, boolean closing) {
        failSimpleWaiters(error);
        for (Operation op : operations()) {
            rt.abort(op, error);
        }
        if (errorHandler != null && !closing) {
            try {
                errorHandler.onError(this, error);
            } catch (Throwable t) {
                LOG.error("endpoint error handler failed for {}", describePeer(), t);
            }
        } else {
            LOG.debug("endpoint to {} failed: {}", describePeer(), error.getMessage());
        }
        if (!closing) {
            startClose(CloseMode.FORCE, new UcxFuture<>());
        }
    }

    // Intrusive list of this endpoint's in-flight operations (lock held).
    void link(Operation op) {
        op.epNext = opsHead;
        if (opsHead != null) {
            opsHead.epPrev = op;
        }
        opsHead = op;
    }

    void unlink(Operation op) {
        if (op.epPrev != null) {
            op.epPrev.epNext = op.epNext;
        } else if (opsHead == op) {
            opsHead = op.epNext;
        }
        if (op.epNext != null) {
            op.epNext.epPrev = op.epPrev;
        }
        op.epPrev = null;
        op.epNext = null;
    }

    private List<Operation> operations() {
        List<Operation> out = new ArrayList<>();
        for (Operation op = opsHead; op != null; op = op.epNext) {
            out.add(op);
        }
        return out;
    }

    // ------------------------------------------------------------------ RMA

    /**
     * The remote keys unpacked on this endpoint and not yet destroyed (lock held). UCX requires a key to
     * be destroyed before the endpoint it was unpacked on.
     */
    private final List<RemoteKey> remoteKeys = new ArrayList<>();
    /**
     * Zeroed bytes after a packed key handed to {@code ucp_ep_rkey_unpack}, which takes no length and
     * trusts the sizes inside the key: a 64-bit memory-domain map with a size byte per domain can claim
     * at most 64 * (1 + 255) bytes plus a small tail, so a corrupted size never reads past our buffer.
     */
    private static final int RKEY_UNPACK_SLACK = 64 * 256 + 1024;

    /**
     * Unpacks a peer's remote key ({@code ucp_ep_rkey_unpack}) for use on this endpoint. The bytes are
     * those of {@link MemoryRegion#packRemoteKey()} (format in {@link RemoteKey}); they are checked before
     * any native call.
     *
     * @param remoteKey the packed bytes; not retained
     * @return the key, owned by this endpoint (destroyed when it closes) and by the caller
     * @throws IllegalArgumentException when the bytes are truncated or not a valid ucx4j remote key
     * @throws UcxException when UCX rejects the packed key (naming {@code ucp_ep_rkey_unpack}), or the
     *     endpoint's failure when it has failed
     * @throws IllegalStateException when the endpoint is closed
     */
    public RemoteKey unpackRemoteKey(byte[] remoteKey) {
        RemoteKeyFormat.Parsed parsed = RemoteKeyFormat.decode(remoteKey);
        ensureOpen();
        return rt.worker.call("unpackRemoteKey", () -> unpackLocked(parsed));
    }

    private RemoteKey unpackLocked(RemoteKeyFormat.Parsed parsed) {
        State s = state;
        if (s == State.FAILED && failure != null) {
            throw failure;
        }
        if (s != State.OPEN) {
            throw new IllegalStateException("endpoint to " + describePeer() + " is closed");
        }
        byte[] packed = parsed.packedKey();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buffer = a.allocate(packed.length + RKEY_UNPACK_SLACK, 8);
            MemorySegment.copy(packed, 0, buffer, ValueLayout.JAVA_BYTE, 0, packed.length);
            MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            int status = NativeCalls.callInt(() -> (byte) Ucp.ep_rkey_unpack.invokeExact(handle, buffer, out));
            if (status != UcxStatus.OK.code()) {
                throw UcxException.of("ucp_ep_rkey_unpack", status, "a " + packed.length + "-byte packed key for a "
                        + parsed.length() + "-byte region, endpoint to " + describePeer()
                        + " (corrupted, or packed by a process this endpoint does not lead to)");
            }
            RemoteKey key = new RemoteKey(this, out.get(ValueLayout.ADDRESS, 0), parsed.base(), parsed.length());
            remoteKeys.add(key);
            return key;
        }
    }

    /**
     * Writes {@code local} into the peer's region at {@code remoteOffset} ({@code ucp_put_nbx}). The
     * future completes when {@code local} may be reused; the data is then not necessarily visible at the
     * peer: {@link #flush()} (or {@link UcxWorker#flush()}) completes when it is. An empty {@code local}
     * completes at once.
     *
     * @param local the bytes to write (see the class comment about memory: heap memory is copied)
     * @param key a key unpacked on this endpoint
     * @param remoteOffset where in the region to write, from its start
     * @return completes when {@code local} may be reused; fails if the endpoint fails or closes first, and
     *     at once with the endpoint's failure when it has already failed
     * @throws IndexOutOfBoundsException when the access does not fit the remote region (nothing is sent)
     * @throws IllegalArgumentException when {@code key} belongs to another endpoint
     * @throws IllegalStateException when the endpoint or the key is closed
     */
    public UcxFuture<Void> putAsync(MemorySegment local, RemoteKey key, long remoteOffset) {
        return rma(true, local, key, remoteOffset);
    }

    /** Blocking twin of {@link #putAsync(MemorySegment, RemoteKey, long)}. */
    public void put(MemorySegment local, RemoteKey key, long remoteOffset) {
        rt.call(() -> putAsync(local, key, remoteOffset), "put");
    }

    /**
     * Reads {@code local.byteSize()} bytes of the peer's region at {@code remoteOffset} into {@code local}
     * ({@code ucp_get_nbx}). The future completes when the data is in {@code local} (copied back, for heap
     * memory). An empty {@code local} completes at once.
     *
     * @param local where to read into; writable
     * @param key a key unpacked on this endpoint
     * @param remoteOffset where in the region to read, from its start
     * @return completes when the data has arrived; fails if the endpoint fails or closes first, and at
     *     once with the endpoint's failure when it has already failed
     * @throws IndexOutOfBoundsException when the access does not fit the remote region (nothing is sent)
     * @throws IllegalArgumentException when {@code key} belongs to another endpoint or {@code local} is
     *     read-only
     * @throws IllegalStateException when the endpoint or the key is closed
     */
    public UcxFuture<Void> getAsync(MemorySegment local, RemoteKey key, long remoteOffset) {
        return rma(false, local, key, remoteOffset);
    }

    /** Blocking twin of {@link #getAsync(MemorySegment, RemoteKey, long)}. */
    public void get(MemorySegment local, RemoteKey key, long remoteOffset) {
        rt.call(() -> getAsync(local, key, remoteOffset), "get");
    }

    private UcxFuture<Void> rma(boolean put, MemorySegment local, RemoteKey key, long remoteOffset) {
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(key, "key");
        if (key.endpoint() != this) {
            throw new IllegalArgumentException("the remote key was unpacked on " + key.endpoint()
                    + ", not on " + this + ": a key works only on its own endpoint");
        }
        long len = local.byteSize();
        key.checkAccess(remoteOffset, len);
        UcxFuture<Void> f = new UcxFuture<>();
        UcxException failed = failure;
        if (failed != null) {
            // The peer is gone (the endpoint may have closed itself since): say so, not just "closed".
            f.completeExceptionally(failed);
            return f;
        }
        ensureOpen();
        key.ensureOpen();
        if (len == 0) {
            f.complete(null);
            return f;
        }
        OperationKind kind = put ? OperationKind.PUT : OperationKind.GET;
        Operation op = new Operation(rt, kind, this, len, f);
        MemorySegment buffer = put ? Buffers.forSend(op, local) : Buffers.forReceive(op, local);
        long remote = key.address(remoteOffset);
        rt.submit(op, () -> {
            if (failure != null) {
                rt.failUnsubmitted(op, failure);
                return;
            }
            if (!usable(op)) {
                return;
            }
            if (!key.acquire()) {
                rt.failUnsubmitted(op, new IllegalStateException("remote key (region of " + key.size()
                        + " bytes) is closed"));
                return;
            }
            f.whenComplete((v, e) -> rt.execute(key::release));
            MemorySegment p = rt.param(op, Upcalls.SEND, 0, 0);
            MemorySegment r;
            try {
                r = put ? (MemorySegment) Ucp.put_nbx.invokeExact(handle, buffer, len, remote, key.handle(), p)
                        : (MemorySegment) Ucp.get_nbx.invokeExact(handle, buffer, len, remote, key.handle(), p);
            } catch (Throwable t) {
                rt.failUnsubmitted(op, t);
                return;
            }
            rt.started(op, r, null);
        });
        return f;
    }

    /** Asks every remote key of this endpoint to close; each is destroyed once idle. Lock held. */
    private void closeRemoteKeys() {
        for (RemoteKey key : new ArrayList<>(remoteKeys)) {
            key.requestClose();
        }
    }

    /** Lock held. */
    void remoteKeyDestroyed(RemoteKey key) {
        remoteKeys.remove(key);
    }

    @Override
    public String toString() {
        return "UcxEndpoint[" + describePeer() + ", " + state + "]";
    }
}
