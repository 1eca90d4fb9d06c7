package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.Libc;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;
import org.ucx4j.internal.worker.Buffers;
import org.ucx4j.internal.worker.Iov;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;
import org.ucx4j.internal.worker.OperationTable;
import org.ucx4j.internal.worker.PolledOperation;
import org.ucx4j.internal.worker.WorkerEvents;

/**
 * A UCP worker ({@code ucp_worker_h}): the progress engine that endpoints and listeners belong to, and
 * the place where tag receives are matched.
 *
 * <p>Threading: safe from any thread, including virtual threads. UCX is only ever called by one thread at
 * a time: see {@link ProgressMode} for who drives progress. Handlers and the continuations of this
 * worker's futures run on its progress thread (in {@link ProgressMode#CALLER} mode, on the thread inside
 * {@link #progress()} or a blocking call), never on a thread that merely submits an operation or waits on
 * a threaded worker; blocking methods called from there are refused with {@link IllegalStateException},
 * because they could never complete. The full contract: {@linkplain org.ucx4j the package description}.
 *
 * <p>Ownership: owned by its {@link UcxContext} and the caller; owns its listeners and endpoints.
 * {@link #close()} closes listeners, then endpoints (gracefully, within the close timeout), cancels what
 * is still pending, stops the progress thread and destroys the worker. Idempotent.
 */
public final class UcxWorker implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxWorker.class);

    private static final long WORKER_ATTR_FIELD_ADDRESS = 1L << 1;
    private static final long WORKER_ATTR_FIELD_MAX_AM_HEADER = 1L << 3;

    private final UcxContext context;
    private final WorkerOptions options;
    private final String name;
    private final NativeWorker rt;
    private final WorkerConnections connections;
    private final AtomicInteger state = new AtomicInteger(); // 0 open, 1 closing, 2 closed
    private final ActiveMessages activeMessages;
    private final long maxAmHeader;

    UcxWorker(UcxContext context, WorkerOptions options, int number) {
        this.context = context;
        this.options = options;
        this.name = options.name() + "-" + number;
        this.rt = new NativeWorker(
                context.handle(),
                new WorkerOptions(
                        options.progressMode(),
                        options.connectTimeout(),
                        options.closeTimeout(),
                        options.spin(),
                        name,
                        options.peerErrorHandling()),
                new Events());
        this.activeMessages = new ActiveMessages(rt);
        long maxHeader = 0;
        if (context.features().contains(Feature.AM)) {
            // Not shared yet: this thread is the only one that can reach the worker.
            long[] queried = new long[1];
            rt.engine.runLocked(() -> {
                activeMessages.register(ActiveMessages.SIMPLE_ID, null);
                queried[0] = queryMaxAmHeader();
            });
            maxHeader = queried[0];
        }
        this.maxAmHeader = maxHeader;
        this.connections = new WorkerConnections(this, rt, options, activeMessages);
    }

    private long queryMaxAmHeader() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(Structs.UCP_WORKER_ATTR);
            attr.set(JAVA_LONG, 0, WORKER_ATTR_FIELD_MAX_AM_HEADER);
            int status = NativeCalls.callInt(() -> Ucp.workerQuery(rt.handle, attr));
            return status == UcxStatus.OK.code()
                    ? attr.get(JAVA_LONG, Structs.offset(Structs.UCP_WORKER_ATTR, "max_am_header"))
                    : 0;
        }
    }

    ActiveMessages activeMessages() {
        return activeMessages;
    }

    // ------------------------------------------------------------------ active messages

    /**
     * Registers the handler for active messages with {@code id}, replacing any earlier one; null removes
     * it (messages for an id without a handler are dropped with a warning, as UCX does).
     *
     * @param id 1 .. 65535 (0 is the simple channel of {@link UcxEndpoint#amSendAsync(MemorySegment)}, UCXX's
     *     {@code am_send}/{@code am_recv})
     * @param handler runs for each message where handlers run (the progress thread), or null
     * @throws IllegalStateException when the context was created without {@link Feature#AM}
     */
    public void setAmHandler(int id, AmHandler handler) {
        checkAmId(id);
        ensureOpen();
        call("setAmHandler", () -> {
            activeMessages.register(id, handler);
            return null;
        });
    }

    /**
     * Sets where received active-message bodies go ({@link AmAllocator#host()} by default).
     *
     * @param allocator the allocator, called where handlers run (the progress thread)
     */
    public void setAmAllocator(AmAllocator allocator) {
        activeMessages.allocator(allocator);
    }

    /**
     * Sets the allocator for simple-channel active messages sent as memory of one kind
     * ({@link UcxEndpoint#amSendAsync(MemorySegment, MemoryKind)}): with a device allocator, a body sent
     * from GPU memory lands in GPU memory on this side, without a host bounce when UCX sends it by
     * rendezvous (bodies below UCX's rendezvous threshold arrive in host memory and are copied in by
     * {@link AmAllocator#copyEager}). {@link MemoryKind#HOST} sets the same allocator as
     * {@link #setAmAllocator(AmAllocator)}, which host bodies of the simple channel and messages of every
     * handler id use.
     *
     * @param kind the memory kind the sender names
     * @param allocator an allocator whose {@link AmAllocator#kind()} is {@code kind}, called where handlers run
     * @throws IllegalArgumentException when the allocator's kind differs
     */
    public void setAmAllocator(MemoryKind kind, AmAllocator allocator) {
        activeMessages.allocator(kind, allocator);
    }

    /**
     * The largest user header an active message may carry on this worker ({@code max_am_header}).
     *
     * @return bytes; 0 when the context has no {@link Feature#AM}
     */
    public long maxAmHeader() {
        return maxAmHeader;
    }

    void checkAmId(int id) {
        if (!context.features().contains(Feature.AM)) {
            throw new IllegalStateException("the context of worker " + name + " was created without Feature.AM");
        }
        if (id < ActiveMessages.MIN_USER_ID || id > ActiveMessages.MAX_USER_ID) {
            throw new IllegalArgumentException("active message id " + id + " is outside "
                    + ActiveMessages.MIN_USER_ID + ".." + ActiveMessages.MAX_USER_ID
                    + (id == ActiveMessages.SIMPLE_ID ? " (0 is the simple channel, UCXX's am_send/am_recv)" : ""));
        }
    }

    NativeWorker runtime() {
        return rt;
    }

    /**
     * The options this worker was created with.
     *
     * @return the options
     */
    public WorkerOptions options() {
        return options;
    }

    /**
     * The worker's name (its progress thread is named after it).
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * How this worker makes progress.
     *
     * @return the mode
     */
    public ProgressMode progressMode() {
        return options.progressMode();
    }

    /**
     * The context this worker belongs to.
     *
     * @return the context
     */
    public UcxContext context() {
        return context;
    }

    // ------------------------------------------------------------------ progress

    /**
     * Runs one round of progress on the calling thread: queued submissions, due timers and
     * {@code ucp_worker_progress} until it reports nothing more. Required in {@link ProgressMode#CALLER}
     * mode. In the threaded modes the progress thread does this, and only it (handlers and continuations
     * run there): this returns 0 at once and touches nothing.
     *
     * @return how much happened (0 when idle, and always in the threaded modes)
     * @throws IllegalStateException when the worker is closed
     */
    public int progress() {
        ensureOpen();
        if (options.progressMode() != ProgressMode.CALLER) {
            return 0;
        }
        return rt.engine.progressOnce();
    }

    /**
     * Waits for a future of this worker's operations and returns its result, driving progress while
     * waiting in {@link ProgressMode#CALLER} mode (a plain {@code join()} would wait forever there).
     * Failures are rethrown as they are (a {@link UcxException}, not wrapped).
     *
     * @param future a future returned by this worker or its endpoints
     * @param <T> the result type
     * @return the result
     * @throws IllegalStateException when called from inside a ucx4j callback
     */
    public <T> T await(CompletableFuture<T> future) {
        return rt.engine.await(future, "await");
    }

    /**
     * Like {@link #await(CompletableFuture)} with a time limit.
     *
     * @param future the future
     * @param timeout how long to wait
     * @param <T> the result type
     * @return the result
     * @throws UcxTimeoutException when it does not complete in time (the operation is left running)
     */
    public <T> T await(CompletableFuture<T> future, Duration timeout) {
        return rt.engine.await(future, "await", timeout.toNanos());
    }

    // ------------------------------------------------------------------ connections

    /**
     * Connects to a listener, waiting up to the connect timeout.
     *
     * @param host host name or address
     * @param port port
     * @return the connected endpoint, owned by this worker and the caller
     * @throws UcxUnreachableException when nothing listens there or the peer refuses
     * @throws UcxTimeoutException when the connection is not established within the connect timeout
     */
    public UcxEndpoint connect(String host, int port) {
        return connect(new InetSocketAddress(host, port));
    }

    /**
     * Connects to a listener, waiting up to the connect timeout.
     *
     * @param address the listener's address
     * @return the connected endpoint
     */
    public UcxEndpoint connect(InetSocketAddress address) {
        return rt.engine.call(() -> connectAsync(address, null), "connect");
    }

    /**
     * Connects to a listener. The future completes once the connection is established (UCX has finished
     * wiring up: a flush on the new endpoint completed), or fails with {@link UcxUnreachableException}
     * or, after the connect timeout, {@link UcxTimeoutException}.
     *
     * @param address the listener's address
     * @param errorHandler told if the endpoint fails later, or null
     * @return the endpoint's future
     */
    public UcxFuture<UcxEndpoint> connectAsync(InetSocketAddress address, EndpointErrorHandler errorHandler) {
        Objects.requireNonNull(address, "address");
        ensureOpen();
        return connections.connect(address, errorHandler);
    }

    /**
     * Connects to another worker by its address, without a listener or an IP address (UCX picks the
     * transports both workers share). Waits up to the connect timeout.
     *
     * @param address the peer worker's address ({@link #address()} on the peer)
     * @return the connected endpoint, owned by this worker and the caller
     * @throws UcxUnreachableException when the peer cannot be reached
     * @throws UcxTimeoutException when the connection is not established within the connect timeout
     */
    public UcxEndpoint connect(WorkerAddress address) {
        return rt.engine.call(() -> connectAsync(address, null), "connect");
    }

    /**
     * Connects to another worker by its address (see {@link #connect(WorkerAddress)}).
     *
     * @param address the peer worker's address
     * @param errorHandler told if the endpoint fails later, or null
     * @return the endpoint's future
     */
    public UcxFuture<UcxEndpoint> connectAsync(WorkerAddress address, EndpointErrorHandler errorHandler) {
        Objects.requireNonNull(address, "address");
        ensureOpen();
        return connections.connect(address, errorHandler);
    }

    /**
     * This worker's UCX address, for peers to {@link #connect(WorkerAddress)} without a listener. Once it
     * was asked for, peers may connect to this worker, and on UCX before 1.14 {@link #close()} then
     * flushes the endpoints UCX made for them before destroying the worker (see there).
     *
     * <p>Threading: any thread. Ownership: the returned copy is the caller's.
     *
     * @return the address (a copy, independent of the worker)
     */
    public WorkerAddress address() {
        ensureOpen();
        rt.addressExported();
        return call("address", () -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment attr = arena.allocate(Structs.UCP_WORKER_ATTR);
                attr.set(JAVA_LONG, 0, WORKER_ATTR_FIELD_ADDRESS);
                int status = NativeCalls.callInt(() -> Ucp.workerQuery(rt.handle, attr));
                if (status != UcxStatus.OK.code()) {
                    throw UcxException.of("ucp_worker_query", status, "worker address of " + name);
                }
                MemorySegment addr = attr.get(ADDRESS, Structs.offset(Structs.UCP_WORKER_ATTR, "address"));
                long len = attr.get(JAVA_LONG, Structs.offset(Structs.UCP_WORKER_ATTR, "address_length"));
                try {
                    return WorkerAddress.of(org.ucx4j.internal.NativeLinker.view(addr, len)
                            .toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
                } finally {
                    NativeCalls.invoke(() -> {
                        Ucp.workerReleaseAddress(rt.handle, addr);
                    });
                }
            }
        });
    }

    /**
     * Listens on all interfaces and accepts every connection.
     *
     * @param port the port, 0 for any free one
     * @param onAccepted receives each new endpoint, where handlers run (the progress thread)
     * @return the listener, owned by this worker and the caller
     * @throws UcxException when the port is in use or cannot be bound
     */
    public UcxListener listen(int port, Consumer<UcxEndpoint> onAccepted) {
        Objects.requireNonNull(onAccepted, "onAccepted");
        return listen(new InetSocketAddress(port), request -> onAccepted.accept(request.accept()));
    }

    /**
     * Listens on an address; the handler decides about each connection.
     *
     * @param bindAddress the address to bind (port 0 for any free port)
     * @param handler accepts or rejects each request, where handlers run (the progress thread)
     * @return the listener, owned by this worker and the caller
     * @throws UcxException naming the address when it cannot be bound (e.g. the port is in use)
     */
    public UcxListener listen(InetSocketAddress bindAddress, ConnectionHandler handler) {
        Objects.requireNonNull(bindAddress, "bindAddress");
        Objects.requireNonNull(handler, "handler");
        ensureOpen();
        return call("listen", () -> connections.createListener(bindAddress, handler));
    }

    /** Forgets and destroys a listener (its close). */
    void closeListener(UcxListener listener) {
        call("listener close", () -> {
            connections.closeListener(listener);
            return null;
        });
    }

    /** An endpoint finished closing; lock held. */
    void endpointClosed(UcxEndpoint ep) {
        connections.endpointClosed(ep);
    }

    /** Lock held: creates an endpoint for an accepted connection request. */
    UcxEndpoint createEndpoint(
            WorkerConnections.EndpointParams fill,
            InetSocketAddress peer,
            EndpointErrorHandler errorHandler,
            String call) {
        return connections.createEndpoint(fill, peer, errorHandler, call);
    }

    // ------------------------------------------------------------------ tag receive

    /**
     * Receives a tagged message whose tag matches {@code tag} on the bits set in {@code mask}, from any
     * endpoint of this worker: UCX matches tag receives per worker, not per endpoint, so whichever peer
     * sends a matching tag first fills the receive (give each peer its own tags to tell them apart).
     *
     * @param buffer where to receive (a longer message fails with {@code MESSAGE_TRUNCATED}); native memory
     *     is used in place and must stay alive until the future completes, heap memory is copied back
     * @param tag the tag to match
     * @param mask which bits must match ({@code -1L} for all)
     * @return the sender's tag and the length
     */
    public UcxFuture<TagInfo> tagRecvAsync(MemorySegment buffer, long tag, long mask) {
        ensureOpen();
        return tagRecv(null, buffer, null, tag, mask);
    }

    /**
     * Like {@link #tagRecvAsync(MemorySegment, long, long)}, and tied to an endpoint's lifetime: the
     * receive fails with the endpoint's error if the endpoint fails, and as canceled if it closes, so a
     * receive that only {@code boundTo}'s peer was meant to satisfy does not wait forever for a dead peer.
     * It is not a filter: matching stays per worker, and a message with a matching tag from another peer
     * fills it just the same (UCX cannot tell senders apart in a tag receive).
     *
     * @param buffer where to receive
     * @param tag the tag to match
     * @param mask which bits must match
     * @param boundTo the endpoint whose failure or close ends the receive; one of this worker's
     * @return the sender's tag and the length
     * @throws IllegalArgumentException when {@code boundTo} belongs to another worker
     * @throws IllegalStateException when {@code boundTo} is closed ({@link UcxException}, when it failed)
     */
    public UcxFuture<TagInfo> tagRecvAsync(MemorySegment buffer, long tag, long mask, UcxEndpoint boundTo) {
        checkBinding(boundTo);
        return tagRecv(boundTo, buffer, null, tag, mask);
    }

    /**
     * Like {@link #tagRecvAsync(MemorySegment, long, long, UcxEndpoint)} into native memory whose kind the
     * caller knows: UCX is told it instead of detecting it per operation (see {@link
     * UcxEndpoint#tagSendAsync(MemorySegment, MemoryKind, long)}, whose caveat holds here: the declaration
     * must be true).
     *
     * @param buffer where to receive, native memory that stays alive until the future completes
     * @param kind what memory {@code buffer} is
     * @param tag the tag to match
     * @param mask which bits must match
     * @param boundTo the endpoint whose failure or close ends the receive; one of this worker's
     * @return the sender's tag and the length
     * @throws IllegalArgumentException when {@code buffer} is heap memory, or {@code boundTo} belongs to
     *     another worker
     * @throws IllegalStateException when {@code boundTo} is closed
     */
    public UcxFuture<TagInfo> tagRecvAsync(
            MemorySegment buffer, MemoryKind kind, long tag, long mask, UcxEndpoint boundTo) {
        Buffers.requireDeclarable(buffer, kind);
        checkBinding(boundTo);
        return tagRecv(boundTo, buffer, kind, tag, mask);
    }

    /**
     * Blocking twin of {@link #tagRecvAsync(MemorySegment, long, long, UcxEndpoint)}, with what
     * {@link #tagRecv(MemorySegment, long, long)} says about how it waits.
     *
     * @param buffer where to receive
     * @param tag the tag to match
     * @param mask which bits must match
     * @param boundTo the endpoint whose failure or close ends the receive; one of this worker's
     * @return the sender's tag and the length
     * @throws IllegalArgumentException when {@code boundTo} belongs to another worker
     * @throws IllegalStateException from inside a ucx4j callback, or when {@code boundTo} or the worker is
     *     closed
     * @throws UcxException when the receive fails (the endpoint failed, the message was longer than the
     *     buffer)
     */
    public TagInfo tagRecv(MemorySegment buffer, long tag, long mask, UcxEndpoint boundTo) {
        return tagRecvPolled(boundTo, buffer, null, tag, mask);
    }

    /**
     * Blocking twin of {@link #tagRecvAsync(MemorySegment, MemoryKind, long, long, UcxEndpoint)}, with what
     * {@link #tagRecv(MemorySegment, long, long)} says about how it waits.
     *
     * @param buffer where to receive, native memory of kind {@code kind}
     * @param kind what memory {@code buffer} is (the declaration must be true)
     * @param tag the tag to match
     * @param mask which bits must match
     * @param boundTo the endpoint whose failure or close ends the receive; one of this worker's
     * @return the sender's tag and the length
     * @throws IllegalArgumentException when {@code buffer} is heap memory, or {@code boundTo} belongs to
     *     another worker
     * @throws IllegalStateException from inside a ucx4j callback, or when {@code boundTo} or the worker is
     *     closed
     * @throws UcxException when the receive fails
     */
    public TagInfo tagRecv(MemorySegment buffer, MemoryKind kind, long tag, long mask, UcxEndpoint boundTo) {
        Buffers.requireDeclarable(buffer, kind);
        return tagRecvPolled(boundTo, buffer, kind, tag, mask);
    }

    /**
     * Blocking twin of {@link #tagRecvAsync(MemorySegment, long, long)}: returns once a message arrived in
     * {@code buffer}. There is no future (and no UCX callback) in between: the cheapest way ucx4j receives
     * one message. On a {@link ProgressMode#CALLER} worker the calling thread submits the receive and
     * progresses the worker until UCX completes it; on a threaded worker the progress thread submits it
     * (or this thread, when the worker's lock is free) and finds it done, while this thread spins,
     * then parks. Interrupted, it asks UCX to cancel the receive and
     * waits (up to 2 s) for UCX to let go of the buffer: a receive that had not matched a message throws
     * {@link UcxCanceledException}, one that had returns the message; the interrupt flag stays set. If UCX
     * still holds the receive after those 2 s (a matched message whose sender stalls), the call throws a
     * {@link UcxException} of status {@code UCS_INPROGRESS}: the receive goes on, takes its message when it
     * comes and writes it into {@code buffer}, and the message is not delivered to anyone else.
     *
     * @param buffer where to receive
     * @param tag the tag to match
     * @param mask which bits must match
     * @return the sender's tag and the length
     * @throws IllegalStateException from inside a ucx4j callback, or when the worker is closed
     * @throws UcxException when the receive fails (the message was longer than the buffer, for instance);
     *     a {@link UcxCanceledException} when interrupted before it matched, or when the worker closes
     *     meanwhile; status {@code UCS_INPROGRESS} as above
     */
    public TagInfo tagRecv(MemorySegment buffer, long tag, long mask) {
        return tagRecvPolled(null, buffer, null, tag, mask);
    }

    /**
     * A blocking tag receive: a polled operation, no future (NativeWorker#runPolled).
     * Refused inside a callback, then on a closed worker or binding, before any staging is made.
     */
    private TagInfo tagRecvPolled(UcxEndpoint ep, MemorySegment buffer, MemoryKind kind, long tag, long mask) {
        rt.engine.checkMayBlock("tagRecv");
        if (ep != null) {
            checkBinding(ep);
        } else {
            ensureOpen();
        }
        PolledOperation op =
                new PolledOperation(rt, OperationKind.TAG_RECV, UcxEndpoint.ownerOf(ep), buffer.byteSize());
        if (kind != null) {
            op.declareMemory(kind);
        }
        op.arguments(rt.handle, Buffers.receiveAddress(op, buffer), tag, mask);
        rt.runPolled(op, TagReceives.ATTRS, TAG_RECV, "tagRecv");
        return (TagInfo) op.value();
    }

    /**
     * Like {@link #tagRecv(MemorySegment, long, long)} with a time limit; on timeout the receive is canceled
     * through UCX and {@link UcxTimeoutException} thrown once UCX has released the buffer.
     */
    public TagInfo tagRecv(MemorySegment buffer, long tag, long mask, Duration timeout) {
        return awaitOrCancel(() -> tagRecvAsync(buffer, tag, mask), "tagRecv", timeout);
    }

    /** Receives into a byte array (copied back on completion). */
    public UcxFuture<TagInfo> tagRecvAsync(byte[] data, long tag, long mask) {
        return tagRecvAsync(MemorySegment.ofArray(data), tag, mask);
    }

    /** Blocking twin of {@link #tagRecvAsync(byte[], long, long)}. */
    public TagInfo tagRecv(byte[] data, long tag, long mask) {
        return tagRecv(MemorySegment.ofArray(data), tag, mask);
    }

    /** Receives into a byte array (copied back), tied to an endpoint's lifetime (not a filter; see above). */
    public UcxFuture<TagInfo> tagRecvAsync(byte[] data, long tag, long mask, UcxEndpoint boundTo) {
        return tagRecvAsync(MemorySegment.ofArray(data), tag, mask, boundTo);
    }

    /** Blocking twin of {@link #tagRecvAsync(byte[], long, long, UcxEndpoint)}. */
    public TagInfo tagRecv(byte[] data, long tag, long mask, UcxEndpoint boundTo) {
        return tagRecv(MemorySegment.ofArray(data), tag, mask, boundTo);
    }

    /** Receives into a buffer's position..limit (direct zero-copy, heap copied back). */
    public UcxFuture<TagInfo> tagRecvAsync(ByteBuffer data, long tag, long mask) {
        return tagRecvAsync(MemorySegment.ofBuffer(data), tag, mask);
    }

    private void checkBinding(UcxEndpoint boundTo) {
        Objects.requireNonNull(boundTo, "boundTo");
        if (boundTo.worker() != this) {
            throw new IllegalArgumentException("tag receive on worker " + name + " bound to an endpoint of worker "
                    + boundTo.worker().name());
        }
        boundTo.lifecycle().ensureOpen();
    }

    private UcxFuture<TagInfo> tagRecv(UcxEndpoint ep, MemorySegment buffer, MemoryKind kind, long tag, long mask) {
        UcxFuture<TagInfo> f = new UcxFuture<>();
        Operation op = f.track(rt, OperationKind.TAG_RECV, UcxEndpoint.ownerOf(ep), buffer.byteSize());
        if (kind != null) {
            op.declareMemory(kind);
        }
        op.arguments(rt.handle, Buffers.receiveAddress(op, buffer), tag, mask);
        rt.startOp(op, false, Upcalls.TAG_RECV, TagReceives.ATTRS, 0, TAG_RECV);
        return f;
    }

    /** A contiguous tag receive: it reads its arguments from the operation, so no call object per message. */
    private static final NativeWorker.NbxCall TAG_RECV =
            (o, p) -> Ucp.tagRecvNbx(o.target(), o.arg(0), o.length(), o.arg(1), o.arg(2), p);

    /**
     * How tag receives complete. A receive that matches a message already here completes inside the
     * call: from UCX 1.16 on, UCX then fills {@code recv_info} (the sender's tag and the length), and the
     * receive completes at once, without a callback (an upcall and a request fewer per message; the
     * message-rate path). UCX 1.13 to 1.15 leave {@code recv_info} unset then (fixed by openucx/ucx
     * df0798c "UCP/TAG: Populate tag_info on immediate completion"), so the tag and the length would be
     * lost: there, every receive completes through the callback.
     */
    private static final class TagReceives {
        static final int ATTRS = org.ucx4j.internal.UcxLibrary.require().atLeast(1, 16)
                ? OperationTable.OP_ATTR_FIELD_RECV_INFO
                : OperationTable.OP_ATTR_FLAG_NO_IMM_CMPL;
    }

    /**
     * Receives one tagged message from any endpoint into several native segments, in order (a scatter
     * receive). Matching is per worker, as for {@link #tagRecvAsync(MemorySegment, long, long)}.
     *
     * @param segments where to receive; their total is the largest message accepted
     * @param tag the tag to match
     * @param mask which bits must match
     * @return the sender's tag and the total length
     */
    public UcxFuture<TagInfo> tagRecvAsync(List<MemorySegment> segments, long tag, long mask) {
        ensureOpen();
        return tagRecvIov(null, segments, tag, mask);
    }

    /**
     * A scatter receive tied to an endpoint's lifetime, as
     * {@link #tagRecvAsync(MemorySegment, long, long, UcxEndpoint)} (not a filter: matching is per worker).
     *
     * @param segments where to receive, in order
     * @param tag the tag to match
     * @param mask which bits must match
     * @param boundTo the endpoint whose failure or close ends the receive; one of this worker's
     * @return the sender's tag and the total length
     */
    public UcxFuture<TagInfo> tagRecvAsync(List<MemorySegment> segments, long tag, long mask, UcxEndpoint boundTo) {
        checkBinding(boundTo);
        return tagRecvIov(boundTo, segments, tag, mask);
    }

    private UcxFuture<TagInfo> tagRecvIov(UcxEndpoint ep, List<MemorySegment> segments, long tag, long mask) {
        UcxFuture<TagInfo> f = new UcxFuture<>();
        Operation op = f.track(rt, OperationKind.TAG_RECV_IOV, UcxEndpoint.ownerOf(ep), Iov.total(segments));
        MemorySegment list = Iov.forReceive(op, segments);
        long count = segments.size();
        rt.startOp(
                op,
                true,
                Upcalls.TAG_RECV,
                TagReceives.ATTRS,
                0,
                (o, p) -> Ucp.tagRecvNbx(rt.handle, list.address(), count, tag, mask, p));
        return f;
    }

    /**
     * Checks, without receiving, whether a message matching {@code tag}/{@code mask} has arrived.
     *
     * @return its sender tag and length, or empty
     */
    public Optional<TagInfo> tagProbe(long tag, long mask) {
        ensureOpen();
        return call("tagProbe", () -> {
            MemorySegment info = rt.tagInfo;
            MemorySegment msg;
            try {
                msg = Ucp.tagProbeNb(rt.handle, tag, mask, 0, info);
            } catch (Throwable t) {
                throw NativeCalls.unchecked(t);
            }
            if (msg.address() == 0) {
                return Optional.<TagInfo>empty();
            }
            return Optional.of(rt.readTagInfo());
        });
    }

    /**
     * Removes unexpected tagged messages matching {@code tag}/{@code mask} (ones that arrived with no
     * receive posted for them), oldest first, up to {@code max}, and throws their data away: eager data
     * is dropped, a rendezvous sender is told the receive was truncated and its send completes. For a
     * process that must bound what peers make it hold, such as messages to tags nobody will ever
     * receive. A receive posted later for a discarded message's tag waits for the next message.
     *
     * <p>Threading: any thread; the work runs on the worker's thread and is done when this returns
     * (a discarded message's data may still be arriving into a scratch buffer of the worker that
     * nobody reads).
     *
     * @param tag the tag to match
     * @param mask which bits must match ({@code -1L} for all, {@code 0} for any message)
     * @param max the most messages to discard, at least 1
     * @return how many were discarded
     */
    public int tagDiscard(long tag, long mask, int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max must be at least 1, got " + max);
        }
        ensureOpen();
        return call("tagDiscard", () -> {
            int n = 0;
            while (n < max && discardOne(tag, mask)) {
                n++;
            }
            return n;
        });
    }

    /** With the worker's lock: removes and discards one matching unexpected message, if any. */
    private boolean discardOne(long tag, long mask) {
        MemorySegment msg;
        MemorySegment request;
        try {
            msg = Ucp.tagProbeNb(rt.handle, tag, mask, 1, rt.tagInfo);
            if (msg.address() == 0) {
                return false;
            }
            request = Ucp.tagMsgRecvNbx(
                    rt.handle, rt.discardBuffer, NativeWorker.DISCARD_BUFFER_BYTES, msg, rt.noCallbackParam);
            // NULL: done at once; -1..-100: a status (truncation is the point); else our request, released
            // now so that UCX frees it when the data is in.
            if (request.address() != 0 && Long.compareUnsigned(request.address(), -100L) < 0) {
                Ucp.requestFree(request.address());
            }
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
        return true;
    }

    // ------------------------------------------------------------------ flush

    /** Guards {@link #flushing} and {@link #nextFlush}. */
    private final Object flushLock = new Object();
    /** A worker flush is in UCX; guarded by {@link #flushLock}. */
    private boolean flushing;
    /** Flushes asked for while one is in UCX: the next one serves them all; guarded by {@link #flushLock}. */
    private List<UcxFuture<Void>> nextFlush = new ArrayList<>();

    /**
     * Completes when every operation posted so far on this worker has completed.
     *
     * <p>At most one worker flush is in UCX at a time: flushes asked for while one is in flight share the
     * next one, which UCX starts when the first ends, so it covers every operation posted before any of
     * them was asked for. (UCX 1.13 counts a worker's flushes in flight in 8 bits and aborts the process
     * past 254 of them.) Like any flush it cannot be canceled: {@link UcxFuture#cancel} and
     * {@link UcxFuture#orTimeout} leave it to complete when UCX is done.
     *
     * @return the flush's future
     */
    public UcxFuture<Void> flushAsync() {
        ensureOpen();
        UcxFuture<Void> f = new UcxFuture<>();
        f.cancelWith(reason -> {}); // a flush cannot be taken back (the class comment of UcxFuture)
        synchronized (flushLock) {
            if (flushing) {
                nextFlush.add(f);
                return f;
            }
            flushing = true;
        }
        startFlush(List.of(f));
        return f;
    }

    /**
     * Starts one worker flush for {@code waiters}; when it ends, completes them and starts the next one for
     * the flushes asked for meanwhile (on the progress thread, where the flush completes).
     */
    private void startFlush(List<UcxFuture<Void>> waiters) {
        UcxFuture<Void> flush = new UcxFuture<>();
        Operation op = flush.track(rt, OperationKind.WORKER_FLUSH, null, 0);
        flush.whenComplete((v, err) -> {
            for (UcxFuture<Void> w : waiters) {
                if (err != null) {
                    w.fail(err);
                } else {
                    w.succeed(null);
                }
            }
            List<UcxFuture<Void>> next;
            synchronized (flushLock) {
                if (nextFlush.isEmpty()) {
                    flushing = false;
                    return;
                }
                next = nextFlush;
                nextFlush = new ArrayList<>();
            }
            startFlush(next);
        });
        // A refusal (the worker is closing) fails the flush, not this call: the continuation above
        // fails these waiters and starts the next group, which fails the same way.
        rt.startOp(op, false, Upcalls.SEND, 0, 0, (o, p) -> Ucp.workerFlushNbx(rt.handle, p));
    }

    /** Blocking twin of {@link #flushAsync()}. */
    public void flush() {
        rt.engine.call(() -> flushAsync(), "flush");
    }

    // ------------------------------------------------------------------ RMA fence

    /**
     * Orders RMA ({@code ucp_worker_fence}): puts and gets issued on this worker after the fence are
     * performed at their targets after those issued before it. It does not wait for anything; use
     * {@link #flush()} or {@link UcxEndpoint#flush()} to know that operations have completed remotely.
     *
     * <p>Threading: safe from any thread; returns at once (runs with the progress lock).
     *
     * @throws UcxException when UCX reports a failure
     * @throws IllegalStateException when the worker is closed
     */
    public void fence() {
        ensureOpen();
        int status = call("fence", () -> NativeCalls.callInt(() -> Ucp.workerFence(rt.handle)));
        UcxContext.check(status, "ucp_worker_fence", "worker " + name);
    }

    // ------------------------------------------------------------------ info

    /**
     * UCX's description of this worker ({@code ucp_worker_print_info}): its address and transports.
     *
     * @return multi-line text
     */
    public String describe() {
        ensureOpen();
        return call(
                "describe",
                () -> Libc.capture(file -> NativeCalls.invoke(() -> {
                    Ucp.workerPrintInfo(rt.handle, file);
                })));
    }

    /**
     * The number of operations in flight (posted, not yet completed).
     *
     * @return a snapshot
     */
    public int pendingOperations() {
        return call("pendingOperations", rt.operations::size);
    }

    /**
     * The endpoints open on this worker.
     *
     * @return a snapshot
     */
    public List<UcxEndpoint> endpoints() {
        return call("endpoints", () -> Collections.unmodifiableList(connections.endpoints()));
    }

    // ------------------------------------------------------------------ plumbing

    /** Runs {@code body} with the lock held and returns its result, waiting if it runs elsewhere. */
    <T> T call(String what, Supplier<T> body) {
        if (rt.engine.inCallbackContext()) {
            return body.get();
        }
        CompletableFuture<T> f = new CompletableFuture<>();
        rt.engine.execute(() -> {
            try {
                f.complete(body.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return rt.engine.await(f, what);
    }

    /**
     * Waits for an operation up to {@code timeout}; past it, cancels the operation through UCX and waits
     * until UCX has released it before throwing {@link UcxTimeoutException}, so the caller may free the
     * buffer as soon as this returns or throws (UCX completes a canceled receive at once; a worker close
     * fails whatever is left, so this cannot wait forever).
     */
    <T> T awaitOrCancel(Supplier<UcxFuture<T>> start, String what, Duration timeout) {
        rt.engine.checkMayBlock(what);
        UcxFuture<T> f = start.get();
        try {
            return rt.engine.await(f, what, timeout.toNanos());
        } catch (UcxTimeoutException e) {
            if (!f.isDone()) {
                f.cancel(false);
                try {
                    rt.engine.await(f, what);
                } catch (UcxException ignored) {
                    // Canceled, as asked; or it raced to completion, but the caller was told it timed out.
                }
            }
            throw e;
        }
    }

    void ensureOpen() {
        if (state.get() != 0) {
            throw new IllegalStateException("UCX worker '" + name + "' is closed");
        }
    }

    /**
     * Cancels pending receives, then closes listeners and endpoints (gracefully, within twice the close
     * timeout: see {@link UcxEndpoint#closeAsync}), stops progress and destroys the worker. A receive that
     * UCX cannot cancel (it matched a rendezvous message whose sender stalls) is given one close timeout to
     * end; if it does not, the endpoints still open are closed by force (with peer error handling), which
     * ends it as canceled. An endpoint already closing is not closed again; its own close ends such
     * receives (see {@link UcxEndpoint#closeAsync}). Idempotent; pending futures complete (as canceled
     * when nothing else applies), and the call returns within about three close timeouts and half a
     * second (four on UCX before 1.14 when the worker's address was handed out).
     *
     * <p>If UCX still holds such a receive at the end on an endpoint that lists it (one with peer error
     * handling that could not be closed by force, or one UCX made for a peer that connected to this
     * worker's address), the receive fails all the same, but the UCX worker is left undestroyed, with a
     * warning: destroying it
     * would abort the process on UCX builds with assertions (UCX 1.13 as Debian ships it). It then stays
     * allocated, with its context (see {@link UcxContext#close()}), until the process exits. In every case
     * a peer that resumes may still write into the receive's buffer if its transport lets it write
     * directly (shared memory, RDMA), as with any receive UCX gave up.
     *
     * <p>On UCX before 1.14, a worker whose {@link #address()} was handed out also flushes, before its
     * destruction, every endpoint UCX holds for it (those UCX made for peers that connected to the
     * address included), within one more close timeout: a peer that stalled while such a connection was
     * being set up leaves UCX's wireup reply queued, and destroying the worker with it would abort the
     * process on builds with assertions (fixed in UCX 1.14). If a flush does not complete, the worker is
     * left undestroyed in the same way, with a warning.
     *
     * <p>Threading: any thread except from inside a ucx4j callback; in {@link ProgressMode#CALLER} mode,
     * the calling thread drives progress while it waits, and so does every mode during that last flush
     * (UCX before 1.14, address handed out): callbacks of operations and active-message handlers may then
     * run on the closing thread. An interrupt does not cut the close's waits short (closing with endpoints
     * still open could abort the process, as above): the thread's interrupt flag is set again when the
     * close returns.
     *
     * @throws IllegalStateException when called from inside a ucx4j callback
     */
    @Override
    public void close() {
        if (rt.engine.inCallbackContext()) {
            throw new IllegalStateException("UcxWorker.close() from inside a ucx4j callback would deadlock");
        }
        if (!state.compareAndSet(0, 1)) {
            return;
        }
        long timeout = options.closeTimeout().toNanos();
        // Interrupts do not cut the close's waits short (ProgressEngine#drive): kept, and set again at the end.
        closeInterrupted = Thread.interrupted();
        try {
            // First the receives, which no flush completes: cancelled through UCX. Queued for the progress
            // thread: the cancellations complete futures, whose continuations run there by the threading
            // contract (in CALLER mode, drive() runs it on this thread).
            CompletableFuture<Void> aborted = new CompletableFuture<>();
            rt.engine.later(() -> {
                try {
                    UcxCanceledException closed =
                            new UcxCanceledException("worker close", "worker " + name + " closed");
                    for (Operation op : rt.operations.pending()) {
                        if (op.kind().awaitsPeer()) {
                            rt.operations.abort(op, closed);
                        }
                    }
                } finally {
                    aborted.complete(null);
                }
            });
            drive(aborted, timeout);
            // UCX cancels a receive that has not matched a message; one that has (a rendezvous whose sender
            // stalls) runs on, listed on the sender's endpoint, and UCX 1.13 aborts the process when it
            // destroys an endpoint with such a request (ucp_ep.c: proto_reqs). A flush close never ends
            // while it is there; a forced one completes it as canceled. So: wait a close timeout for the
            // receives to end, and close the endpoints by force if some did not (peer error handling on;
            // without it UCX refuses a forced close).
            long receivesBy = System.nanoTime() + timeout;
            CompletableFuture<Void> never = new CompletableFuture<>();
            while (receivesPending() && System.nanoTime() - receivesBy < 0) {
                drive(never, TimeUnit.MILLISECONDS.toNanos(5));
            }
            CloseMode mode = receivesPending() ? CloseMode.FORCE : CloseMode.FLUSH;
            CompletableFuture<List<UcxFuture<Void>>> started = new CompletableFuture<>();
            rt.engine.later(() -> {
                List<UcxFuture<Void>> closes = new ArrayList<>();
                try {
                    connections.closeAll(closes, mode);
                } finally {
                    started.complete(closes);
                }
            });
            drive(started, timeout);
            List<UcxFuture<Void>> closes = started.getNow(List.of());
            CompletableFuture<Void> all = CompletableFuture.allOf(closes.toArray(new CompletableFuture<?>[0]));
            // A graceful endpoint close may wait one timeout for its operations, then closes by force.
            drive(all, 2 * timeout);
            // Let UCX report what the closes and cancellations completed, briefly.
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
            while (lookWhileClosing(() -> rt.operations.size() > 0, true) && System.nanoTime() < deadline) {
                drive(never, TimeUnit.MILLISECONDS.toNanos(5));
            }
        } finally {
            boolean destroyed = false;
            try {
                closeInterrupted |= Thread.interrupted();
                destroyed = rt.destroy();
            } finally {
                state.set(2);
                context.workerClosed(this, destroyed);
                if (closeInterrupted | Thread.interrupted()) {
                    Thread.currentThread().interrupt();
                }
            }
            if (!destroyed) {
                LOG.warn(
                        "UCX worker '{}' closed but not destroyed: {}, and destroying the worker would abort"
                                + " the process on UCX builds with assertions. Its operations failed; the"
                                + " native worker (and its context) stay allocated until the process exits.",
                        name,
                        rt.abandonReason());
            }
        }
    }

    /** Whether the closing thread was interrupted during {@link #close()}; that thread only. */
    private boolean closeInterrupted;

    /** A wait of the close: {@code ProgressEngine#drive}, its interrupts kept for the end of the close. */
    private void drive(CompletableFuture<?> f, long timeoutNanos) {
        closeInterrupted |= rt.engine.drive(f, timeoutNanos);
    }

    /** Whether a receive (an operation that waits for a peer) is still in flight; takes the lock. */
    private boolean receivesPending() {
        return lookWhileClosing(
                () -> {
                    for (Operation op : rt.operations.pending()) {
                        if (op.kind().awaitsPeer()) {
                            return true;
                        }
                    }
                    return false;
                },
                true);
    }

    /**
     * Runs {@code body} with the lock held and returns its answer, for the close: waits as
     * {@link #drive} does (an interrupt does not cut it short), and answers {@code otherwise} if no answer
     * came within the close timeout or the worker is being destroyed.
     */
    private <T> T lookWhileClosing(Supplier<T> body, T otherwise) {
        CompletableFuture<T> f = new CompletableFuture<>();
        try {
            rt.engine.execute(() -> f.complete(body.get()));
        } catch (IllegalStateException destroyed) {
            return otherwise;
        }
        drive(f, options.closeTimeout().toNanos());
        return f.getNow(otherwise);
    }

    /** The upcalls about what this worker owns, kept off its public API. */
    private final class Events implements WorkerEvents {
        @Override
        public void onEndpointError(int endpointId, int status) {
            connections.endpointFailed(endpointId, status);
        }

        @Override
        public void onConnectionRequest(int listenerId, MemorySegment connRequest) {
            connections.connectionRequested(listenerId, connRequest);
        }

        @Override
        public byte onActiveMessage(
                int handlerId,
                MemorySegment header,
                long headerLength,
                MemorySegment data,
                long length,
                MemorySegment param) {
            return activeMessages.onMessage(handlerId, header, headerLength, data, length, param);
        }
    }

    @Override
    public String toString() {
        return "UcxWorker[" + name + ", " + options.progressMode().configName() + (state.get() != 0 ? ", closed" : "")
                + "]";
    }
}
