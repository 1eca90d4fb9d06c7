package org.ucx4j;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.Libc;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;
import org.ucx4j.internal.worker.Buffers;
import org.ucx4j.internal.worker.Iov;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;
import org.ucx4j.internal.worker.OperationOwner;
import org.ucx4j.internal.worker.OperationTable;
import org.ucx4j.internal.worker.PolledOperation;

/**
 * A connection to one peer ({@code ucp_ep_h}): tag sends, stream messages, active messages, RMA, flush,
 * close.
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
 * endpoint closes itself.
 *
 * <p>Tag receives are the worker's ({@link UcxWorker#tagRecvAsync(MemorySegment, long, long)}), as in UCX:
 * a tag receive matches a message from any peer of the worker, so there is no per-endpoint tag receive.
 * {@link UcxWorker#tagRecvAsync(MemorySegment, long, long, UcxEndpoint)} ties one to an endpoint's
 * lifetime (it fails when the endpoint fails) without filtering by sender: give each peer its own tags.
 * Stream receives and {@link #amRecvAsync()} are per endpoint.
 *
 * <p>Ownership: owned by its worker (closed with it) and by the caller. {@link #close()} is idempotent;
 * operations after close throw {@link IllegalStateException}.
 *
 * <p>Threading: safe from any thread.
 */
public final class UcxEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxEndpoint.class);
    private static final int STREAM_RECV_FLAG_WAITALL = 1;

    private final UcxWorker worker;
    private final NativeWorker rt;
    final MemorySegment handle;
    final int id;
    private final InetSocketAddress peer;
    private final EndpointLifecycle lifecycle;
    private final SimpleAmChannel simple;
    private final EndpointRma rma;

    UcxEndpoint(
            UcxWorker worker,
            NativeWorker rt,
            MemorySegment handle,
            int id,
            InetSocketAddress peer,
            EndpointErrorHandler handler) {
        this.worker = worker;
        this.rt = rt;
        this.handle = handle;
        this.id = id;
        this.peer = peer;
        this.lifecycle = new EndpointLifecycle(this, rt, handler);
        this.simple = new SimpleAmChannel(this);
        this.rma = new EndpointRma(this, rt);
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
        return startTagSend(buffer, null, tag);
    }

    /**
     * Sends a tagged message from native memory whose kind the caller knows. UCX is told the kind instead
     * of detecting it: where its GPU transports are loaded, UCX otherwise looks every native buffer up in
     * its memory-type cache (and may ask the GPU driver), on every operation; a JVM buffer that a thread
     * malloc'd after UCX started can take the driver path every time (docs/CONFIGURATION.md, "Declare the
     * memory"). Heap buffers need no declaration (they are staged in host memory).
     *
     * <p>The declaration must be true: UCX copies declared host memory with the CPU and declared CUDA
     * memory with the GPU's copy engines, and a false one makes it read memory the wrong way (a crash,
     * or wrong bytes). Where in doubt, use {@link #tagSendAsync(MemorySegment, long)}.
     *
     * @param buffer the payload, native memory that stays alive until the future completes
     * @param kind what memory {@code buffer} is
     * @param tag the 64-bit tag
     * @return completes when the buffer may be reused
     * @throws IllegalArgumentException when {@code buffer} is heap memory
     */
    public UcxFuture<Void> tagSendAsync(MemorySegment buffer, MemoryKind kind, long tag) {
        Buffers.requireDeclarable(buffer, kind);
        return startTagSend(buffer, kind, tag);
    }

    /** A tag send; {@code kind} null: UCX detects the memory type (or the core stages heap memory). */
    private UcxFuture<Void> startTagSend(MemorySegment buffer, MemoryKind kind, long tag) {
        UcxFuture<Void> f = new UcxFuture<>();
        Operation op = f.track(rt, OperationKind.TAG_SEND, lifecycle, buffer.byteSize());
        if (kind != null) {
            op.declareMemory(kind);
        }
        lifecycle.ensureOpen();
        op.arguments(handle, Buffers.sendAddress(op, buffer), tag, 0);
        rt.startOp(op, false, Upcalls.SEND, 0, 0, TAG_SEND);
        return f;
    }

    /** A contiguous tag send: it reads its arguments from the operation, so no call object per message. */
    private static final NativeWorker.NbxCall TAG_SEND =
            (o, p) -> Ucp.tagSendNbx(o.target(), o.arg(0), o.length(), o.arg(1), p);

    /**
     * Blocking twin of {@link #tagSendAsync(MemorySegment, long)}: returns when the buffer may be reused.
     * There is no future (and no UCX callback) in between: the cheapest way ucx4j sends one message. On a
     * {@link ProgressMode#CALLER} worker the calling thread submits the send and progresses the worker
     * until UCX is done with it; on a threaded worker the progress thread submits it (or this thread, when
     * the worker's lock is free) and finds it done, while this thread spins, then parks. Interrupted,
     * it waits (up to 2 s) for UCX to finish with the
     * buffer, then returns as usual with the interrupt flag set. If UCX still holds the send after those
     * 2 s, the call throws a {@link UcxException} of status {@code UCS_INPROGRESS}: the send goes on, may
     * still be delivered, and reads {@code buffer} until it ends (sending again risks a duplicate).
     *
     * @param buffer the payload (see the class comment about memory)
     * @param tag the 64-bit tag
     * @throws IllegalStateException from inside a ucx4j callback, or when the endpoint or worker is closed
     * @throws UcxException when UCX fails the send (the endpoint failed, for instance); a
     *     {@link UcxCanceledException} when the endpoint or worker closes meanwhile; status
     *     {@code UCS_INPROGRESS} as above
     */
    public void tagSend(MemorySegment buffer, long tag) {
        tagSendPolled(buffer, null, tag);
    }

    /**
     * Blocking twin of {@link #tagSendAsync(MemorySegment, MemoryKind, long)}, with what
     * {@link #tagSend(MemorySegment, long)} says about how it waits.
     *
     * @param buffer the payload, native memory of kind {@code kind}
     * @param kind what memory {@code buffer} is (the declaration must be true)
     * @param tag the 64-bit tag
     * @throws IllegalArgumentException when {@code buffer} is heap memory
     * @throws IllegalStateException from inside a ucx4j callback, or when the endpoint or worker is closed
     * @throws UcxException when UCX fails the send
     */
    public void tagSend(MemorySegment buffer, MemoryKind kind, long tag) {
        Buffers.requireDeclarable(buffer, kind);
        tagSendPolled(buffer, kind, tag);
    }

    /** A blocking tag send: a polled operation, no future (NativeWorker#runPolled). */
    private void tagSendPolled(MemorySegment buffer, MemoryKind kind, long tag) {
        rt.engine.checkMayBlock("tagSend");
        lifecycle.ensureOpen();
        PolledOperation op = new PolledOperation(rt, OperationKind.TAG_SEND, lifecycle, buffer.byteSize());
        if (kind != null) {
            op.declareMemory(kind);
        }
        op.arguments(handle, Buffers.sendAddress(op, buffer), tag, 0);
        rt.runPolled(op, 0, TAG_SEND, "tagSend");
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
        lifecycle.ensureOpen();
        Operation op = f.track(rt, OperationKind.TAG_SEND_IOV, lifecycle, Iov.total(segments));
        MemorySegment list = Iov.forSend(op, segments);
        long count = segments.size();
        rt.startOp(op, true, Upcalls.SEND, 0, 0, (o, p) -> Ucp.tagSendNbx(handle, list.address(), count, tag, p));
        return f;
    }

    /** Blocking twin of {@link #tagSendAsync(java.util.List, long)}. */
    public void tagSend(java.util.List<MemorySegment> segments, long tag) {
        rt.engine.call(() -> tagSendAsync(segments, tag), "tagSend");
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
            lifecycle.ensureOpen();
            f.succeed(null);
            return f;
        }
        Operation op = f.track(rt, OperationKind.STREAM_SEND, lifecycle, buffer.byteSize());
        lifecycle.ensureOpen();
        long src = Buffers.sendAddress(op, buffer);
        long len = buffer.byteSize();
        rt.startOp(op, false, Upcalls.SEND, 0, 0, (o, p) -> Ucp.streamSendNbx(handle, src, len, p));
        return f;
    }

    /** Blocking twin of {@link #streamSendAsync(MemorySegment)}. */
    public void streamSend(MemorySegment buffer) {
        rt.engine.call(() -> streamSendAsync(buffer), "streamSend");
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
            lifecycle.ensureOpen();
            f.succeed(0L);
            return f;
        }
        Operation op = f.track(rt, OperationKind.STREAM_RECV, lifecycle, buffer.byteSize());
        lifecycle.ensureOpen();
        long dst = Buffers.receiveAddress(op, buffer);
        long len = buffer.byteSize();
        rt.startOp(
                op,
                false,
                Upcalls.STREAM_RECV,
                OperationTable.OP_ATTR_FIELD_FLAGS,
                STREAM_RECV_FLAG_WAITALL,
                (o, p) -> Ucp.streamRecvNbx(handle, dst, len, rt.lengthOut, p));
        return f;
    }

    /** Blocking twin of {@link #streamRecvAsync(MemorySegment)}. */
    public long streamRecv(MemorySegment buffer) {
        return rt.engine.call(() -> streamRecvAsync(buffer), "streamRecv");
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
     * @param id the handler id, 1 .. 65535 (0 is the simple channel, UCXX's {@code am_send})
     * @param header the user header (copied; at most {@link UcxWorker#maxAmHeader()} bytes)
     * @param body the body (see the class comment about memory)
     * @param mode eager, rendezvous, or let UCX choose
     * @return completes when the body may be reused
     * @throws IllegalArgumentException when the header is larger than the worker allows (before anything is sent)
     */
    public UcxFuture<Void> amSendAsync(int id, MemorySegment header, MemorySegment body, AmSendMode mode) {
        worker.checkAmId(id);
        return startAmSend(id, header, body, null, mode);
    }

    /**
     * Sends an active message whose body is several segments, gathered by UCX (a scatter-gather send).
     *
     * @param id the handler id, 1 .. 65535
     * @param header the user header (copied)
     * @param body the body parts, in order
     * @param mode eager, rendezvous, or let UCX choose
     * @return completes when the parts may be reused
     */
    public UcxFuture<Void> amSendAsync(
            int id, MemorySegment header, java.util.List<MemorySegment> body, AmSendMode mode) {
        worker.checkAmId(id);
        return startAmSend(id, header, null, body, mode);
    }

    /** Blocking twin of {@link #amSendAsync(int, MemorySegment, MemorySegment, AmSendMode)}. */
    public void amSend(int id, MemorySegment header, MemorySegment body, AmSendMode mode) {
        rt.engine.call(() -> amSendAsync(id, header, body, mode), "amSend");
    }

    /**
     * Sends {@code body} on this endpoint's simple active-message channel: the peer receives it with
     * {@link #amRecvAsync()} on its endpoint to us, needing no size in advance. The wire format is UCXX's
     * {@code am_send}/{@code am_recv} (AM id 0 and UCXX's 14-byte header: memory type, has-callback,
     * memory-type policy, user-header length), so a UCXX peer's {@code am_recv} receives it and its
     * {@code am_send} reaches our {@link #amRecvAsync()}.
     *
     * @param body the bytes (host memory)
     * @return completes when the body may be reused
     */
    public UcxFuture<Void> amSendAsync(MemorySegment body) {
        return simple.send(body, MemoryKind.HOST);
    }

    /**
     * Sends {@code body}, memory of the given kind, on this endpoint's simple active-message channel: the
     * header names the kind as UCX's memory type, and the peer's worker receives the body into memory from
     * its allocator for that kind ({@link UcxWorker#setAmAllocator(MemoryKind, AmAllocator)}), as UCXX's
     * {@code am_send} of a CUDA buffer. Device bodies are sent with UCXX's strict policy: a receiver
     * without an allocator for the kind fails that receive with the reason rather than landing the body
     * in host memory.
     *
     * @param body the bytes (device memory for {@link MemoryKind#CUDA})
     * @param kind the kind of {@code body}'s memory
     * @return completes when the body may be reused
     */
    public UcxFuture<Void> amSendAsync(MemorySegment body, MemoryKind kind) {
        return simple.send(body, Objects.requireNonNull(kind, "kind"));
    }

    /** Blocking twin of {@link #amSendAsync(MemorySegment)}. */
    public void amSend(MemorySegment body) {
        rt.engine.call(() -> amSendAsync(body), "amSend");
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
        return simple.receive();
    }

    /** Blocking twin of {@link #amRecvAsync()}. */
    public MemorySegment amRecv() {
        return rt.engine.call(this::amRecvAsync, "amRecv");
    }

    /** Starts an active-message send; the simple channel sends through it too. */
    UcxFuture<Void> startAmSend(
            int id, MemorySegment header, MemorySegment body, java.util.List<MemorySegment> parts, AmSendMode mode) {
        Objects.requireNonNull(header, "header");
        Objects.requireNonNull(mode, "mode");
        long hlen = header.byteSize();
        if (hlen > worker.maxAmHeader()) {
            throw new IllegalArgumentException("active message header of " + hlen + " bytes exceeds this worker's "
                    + "maximum of " + worker.maxAmHeader() + " bytes");
        }
        lifecycle.ensureOpen();
        UcxFuture<Void> f = new UcxFuture<>();
        long bodyLength = parts != null
                ? Iov.total(parts)
                : Objects.requireNonNull(body, "body").byteSize();
        Operation op = f.track(rt, OperationKind.AM_SEND, lifecycle, bodyLength);
        MemorySegment src;
        long count;
        MemorySegment hdr = Buffers.forHeader(op, header);
        try {
            src = parts != null ? Iov.forSend(op, parts) : Buffers.forSend(op, body);
            count = parts != null ? parts.size() : bodyLength;
        } catch (RuntimeException e) {
            Buffers.freeHeader(op);
            throw e;
        }
        MemorySegment hdrPtr = hdr;
        int flags = ActiveMessages.SEND_FLAG_REPLY | mode.flag();
        boolean iov = parts != null;
        rt.startOp(
                op,
                iov,
                Upcalls.SEND,
                OperationTable.OP_ATTR_FIELD_FLAGS,
                flags,
                (o, p) -> Ucp.amSendNbx(handle, id, hdrPtr, hlen, src, count, p));
        return f;
    }

    /** Lock held: a simple-channel message from our peer arrived. */
    void deliverSimple(AmMessage message) {
        simple.deliver(message);
    }

    // ------------------------------------------------------------------ flush and close

    /**
     * Completes when everything sent so far on this endpoint has completed (locally and, for RMA, remotely).
     *
     * @return the flush's future
     */
    public UcxFuture<Void> flushAsync() {
        lifecycle.ensureOpen();
        UcxFuture<Void> f = new UcxFuture<>();
        Operation op = f.track(rt, OperationKind.ENDPOINT_FLUSH, lifecycle, 0);
        rt.submit(op, () -> startFlush(op));
        return f;
    }

    /** Lock held: starts a flush of this endpoint ({@code op} may be a connect's). */
    void startFlush(Operation op) {
        if (!lifecycle.admit(op)) {
            return;
        }
        submitFlush(op);
    }

    /** Lock held: calls {@code ucp_ep_flush_nbx} whatever the state (a closing endpoint's last flush). */
    void submitFlush(Operation op) {
        MemorySegment p = rt.operations.param(op, Upcalls.SEND, 0, 0);
        MemorySegment r;
        try {
            r = Ucp.epFlushNbx(handle, p);
        } catch (Throwable t) {
            rt.operations.failUnsubmitted(op, t);
            return;
        }
        rt.operations.started(op, r, null);
    }

    /** Blocking twin of {@link #flushAsync()}. */
    public void flush() {
        rt.engine.call(() -> flushAsync(), "flush");
    }
    /**
     * Closes the endpoint. New operations are refused at once; receives posted through it that have not
     * matched complete with {@link UcxCanceledException}. In {@link CloseMode#FLUSH} mode the operations
     * in flight (sends, RMA, receives already matched) get up to the worker's close timeout to complete,
     * then UCX says goodbye to the peer; whatever is still in flight then (a peer that stopped receiving
     * or died) is canceled by a forced close. In {@link CloseMode#FORCE} mode they complete as canceled
     * at once. A failed endpoint always closes by force. Calling it again returns the same future.
     *
     * <p>With peer error handling, a graceful close made while the worker has a tag or active-message
     * receive in UCX's hands (one may have matched a rendezvous message from this peer, which UCX tracks
     * on this endpoint and which only a forced close ends) flushes the endpoint, so that what was sent
     * still arrives, and then closes it by force: such a receive, if it came from this peer, fails with
     * {@link UcxCanceledException} rather than being left to abort the process when UCX destroys the
     * endpoint (UCX 1.13). Receives from other peers, and those not yet matched, are not affected.
     *
     * <p>Threading: any thread; the future completes on the worker's progress thread (or the thread that
     * drives progress in {@link ProgressMode#CALLER} mode). Ownership: the endpoint stays the caller's
     * handle, unusable once closing.
     *
     * @param mode graceful or forced
     * @return completes when UCX has released the endpoint (or exceptionally after twice the worker's
     *     close timeout)
     */
    public UcxFuture<Void> closeAsync(CloseMode mode) {
        Objects.requireNonNull(mode, "mode");
        return lifecycle.closeAsync(mode);
    }

    /** Starts a close, or ties {@code f} to the close already under way; lock held. */
    void startClose(CloseMode requested, UcxFuture<Void> f) {
        lifecycle.startClose(requested, f);
    }

    /**
     * Closes gracefully ({@link CloseMode#FLUSH}) and waits up to twice the worker's close timeout. Never throws
     * for a peer that is already gone; idempotent.
     */
    @Override
    public void close() {
        UcxFuture<Void> f = closeAsync(CloseMode.FLUSH);
        if (rt.engine.inCallbackContext()) {
            return; // Cannot wait here; the close proceeds on its own.
        }
        try {
            rt.engine.await(f, "close");
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
        return lifecycle.isOpen();
    }

    /**
     * Why the endpoint failed.
     *
     * @return the failure, or empty when it has not failed
     */
    public Optional<UcxException> failure() {
        return lifecycle.failure();
    }

    /**
     * UCX's description of this endpoint ({@code ucp_ep_print_info}): its lanes (which transport and device
     * carries what) and which protocol and transport a message of each size takes. Its layout is UCX's and
     * differs between UCX versions (1.13 lists thresholds, 1.16 and later tables).
     *
     * <p>Threading: any thread; runs on the worker's progress thread and waits for it.
     *
     * @return multi-line text
     * @throws IllegalStateException when the endpoint is closed or failed
     */
    public String describe() {
        if (!isOpen()) {
            throw new IllegalStateException("endpoint to " + describePeer() + " is not open");
        }
        return worker.call(
                "describe",
                () -> Libc.capture(file -> NativeCalls.invoke(() -> {
                    Ucp.epPrintInfo(handle, file);
                })));
    }

    /**
     * The UCX transports that carry a tag message of {@code size} bytes from host memory on this endpoint, as
     * UCX describes it ({@link #describe()}): for example {@code [sysv]} for small messages between two
     * processes of one host, {@code [cma]} for their rendezvous, {@code [tcp]} where shared memory is left
     * out. For rendezvous, UCX 1.16 and later give their own estimate (the receiver takes part in the choice).
     *
     * <p>Threading: any thread; runs on the worker's progress thread and waits for it.
     *
     * @param size the message size in bytes, at least 0
     * @return transport names in UCX's order, without duplicates; empty when UCX's description does not say
     * @throws IllegalStateException when the endpoint is closed or failed
     */
    public java.util.List<String> tagTransports(long size) {
        if (size < 0) {
            throw new IllegalArgumentException("negative size " + size);
        }
        return EndpointDescription.tagTransports(describe(), size);
    }

    /**
     * The worker this endpoint belongs to.
     *
     * @return the worker
     */
    public UcxWorker worker() {
        return worker;
    }

    String describePeer() {
        return peer == null ? "(worker address)" : peer.getAddress().getHostAddress() + ":" + peer.getPort();
    }

    /** Called with the lock held, from inside UCX's error callback, when this endpoint failed. */
    void failed(int status) {
        lifecycle.failed(status);
    }

    EndpointLifecycle lifecycle() {
        return lifecycle;
    }

    SimpleAmChannel simpleChannel() {
        return simple;
    }

    EndpointRma rma() {
        return rma;
    }

    NativeWorker runtime() {
        return rt;
    }

    /** What operations on this endpoint are tied to. */
    OperationOwner owner() {
        return lifecycle;
    }

    /** The owner for an operation that may or may not be tied to an endpoint. */
    static OperationOwner ownerOf(UcxEndpoint endpoint) {
        return endpoint == null ? null : endpoint.lifecycle;
    }

    // ------------------------------------------------------------------ RMA

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
        return rma.unpackRemoteKey(remoteKey);
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
        return rma.start(true, local, key, remoteOffset);
    }

    /** Blocking twin of {@link #putAsync(MemorySegment, RemoteKey, long)}. */
    public void put(MemorySegment local, RemoteKey key, long remoteOffset) {
        rt.engine.call(() -> putAsync(local, key, remoteOffset), "put");
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
        return rma.start(false, local, key, remoteOffset);
    }

    /** Blocking twin of {@link #getAsync(MemorySegment, RemoteKey, long)}. */
    public void get(MemorySegment local, RemoteKey key, long remoteOffset) {
        rt.engine.call(() -> getAsync(local, key, remoteOffset), "get");
    }

    /** Lock held. */
    void remoteKeyDestroyed(RemoteKey key) {
        rma.destroyed(key);
    }

    @Override
    public String toString() {
        return "UcxEndpoint[" + describePeer() + ", " + lifecycle.stateName() + "]";
    }
}
