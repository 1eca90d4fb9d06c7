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
 * A comm over one UCX endpoint, with tag messages: each side receives on the tag T it announced in the
 * handshake and its neighbours. A message is one header message on T (header and frame table, and the
 * frames themselves when the whole fits in {@value #INLINE_LIMIT} bytes), then, once the receiver asked
 * for them, one tag message per non-empty frame on T | 1, or in {@code multi-buffer} mode one
 * scatter-gather message of all frames. UCX keeps messages of one tag from one endpoint in order, so
 * posting a message's sends under one lock keeps concurrent writers' messages whole. Frame receives are
 * posted only after the header said what to expect, into memory from the allocator, with the exact
 * sizes; a peer sending more than it announced fails the receive (UCX reports truncation) and aborts
 * the comm. Flow control (credit for headers, frames on request, control records on T | 2; docs/WIRE.md)
 * bounds what a peer can make this side hold; see the "receiving" section.
 *
 * <p>Threading: any thread may write, read and close (AbstractComm); UCX's completions run on the
 * worker's progress thread (or on the thread that posted a receive that completed at once). The receive
 * pipeline ({@code pipeline}) and the send queues ({@code sendLock}) have locks of their own.
 */
final class UcxComm extends AbstractComm {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(UcxComm.class);
    /** Header messages up to this size carry their frames inline; the receive buffer for headers. */
    static final int INLINE_LIMIT = 8192;

    private final UcxEndpoint endpoint;
    private final UcxWorker worker;
    private final long myTag;
    private final long peerTag;
    private final UcxRuntime runtime;
    private final MemorySegment headerBuffer;
    /** Where control records from the peer arrive (one receive always posted). */
    private final MemorySegment controlBuffer;
    /**
     * Native buffers for the control records this side sends, sent from there as declared host memory. A
     * record from a {@code byte[]} was staged into malloc'd memory and its memory type detected by UCX on
     * every send, which on a machine with CUDA can cost microseconds on the progress thread, once every
     * {@link #GRANT_BATCH} messages.
     */
    private final SendBuffers controlOut;
    /** How many control records may be in flight from {@link #controlOut}; more go from the heap. */
    static final int CONTROL_BUFFERS = 4;

    private final Arena headerArena = Arena.ofShared();
    private final Object sendLock = new Object();
    private volatile boolean released;
    private boolean closeSent;
    private volatile boolean lingering;
    /**
     * The handshake socket ended or failed (the peer closed its endpoint, aborted or died; or it sent
     * bytes there, or the socket failed here).
     */
    private volatile boolean peerGone;
    /** Set once the endpoint closed and the tag and the runtime were let go ({@link #finish}). */
    private volatile boolean finished;

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
        this.controlBuffer = headerArena.allocate(WireFormat.CONTROL_BYTES, 8);
        this.controlOut = new SendBuffers(headerArena, WireFormat.CONTROL_BYTES, CONTROL_BUFFERS);
        this.inlineBuffers = new SendBuffers(headerArena, INLINE_LIMIT, INLINE_BUFFERS);
        runtime.watchFrames(myTag, this::strayFrame);
        postControl();
        postHeader();
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
        peerGone = true;
        failed(new CommClosedException("comm " + localAddress() + " <-> " + peerAddress() + " lost: " + why));
    }

    /** The runtime whose worker this comm uses (the shared one, or one kept for a same-host peer). */
    UcxRuntime runtime() {
        return runtime;
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

    /*
     * Flow control (docs/WIRE.md, "Flow control"). Headers arrive on this side's tag, into a receive
     * that is always posted; each side may send CREDIT_WINDOW messages beyond those the other has
     * handed to its reader, and a header beyond that fails the comm at once. Frames travel on the tag |
     * FRAMES, and only after this side asked for them (a control record), which it does once it has
     * memory for them and has posted their receives: so no frame of an honest peer is ever unexpected,
     * and the runtime's drain fails the comm of any frame found there. Together they bound what a peer,
     * hostile or merely faster than the reader, can make UCX hold for this comm.
     */

    /** Messages the peer may send beyond those handed to this side's reader. */
    static final int CREDIT_WINDOW = 32;
    /** A grant goes out once this many messages reached the reader since the last one. */
    static final int GRANT_BATCH = 8;

    /**
     * Messages whose header arrived and that the reader has not taken yet, in order; with the end (close
     * marker or failure) last. At most {@link #CREDIT_WINDOW} messages and the end.
     */
    private final ArrayDeque<Incoming> pipeline = new ArrayDeque<>();
    /** Messages of the pipeline whose frames were not asked for yet, in order. */
    private final ArrayDeque<Incoming> unadmitted = new ArrayDeque<>();
    /** The listener's budget is being asked for the head of {@link #unadmitted}. */
    private boolean admitting;
    /** A message's frames could not be received here: no later one's are asked for. */
    private boolean admissionStopped;
    /** Messages whose frames were asked for and that the reader has not taken (at most {@link #PIPELINE_DEPTH}). */
    private int admittedAhead;
    /** Their frames' bytes (at most {@code max-in-flight}, but one message may go beyond). */
    private long pipelineBytes;
    /** No header receive is posted again: the close marker, an error or the release came. */
    private boolean headersEnded;
    /** Whether the reader side (AbstractComm) is waiting for the pipeline's head. */
    private boolean headWanted;
    /**
     * Message headers received (the close marker excluded). Written only by the header path, whose
     * callbacks run one at a time (one header receive is posted at a time); volatile for tests.
     */
    private volatile long headersReceived;
    /** Messages handed to the reader. */
    private long delivered;
    /**
     * The most messages the peer was told it may send, counting from the first. Written with the
     * pipeline's lock; read without it by the header path (it only grows, and a message counted against
     * an older grant is checked against less than the peer may have been told).
     */
    private volatile long grantedSent = CREDIT_WINDOW;
    /** The last message whose frames this side asked for, and the last such number sent. */
    private long framesWanted;

    private long framesWantedSent;

    /** Messages whose frames' receives may be posted ahead of the reader. */
    static final int PIPELINE_DEPTH = 8;

    /** One message being received: done with the message, or failed with an {@link End}. */
    private static final class Incoming {
        final CompletableFuture<Message> done = new CompletableFuture<>();
        /** The message's number, counting from 1; 0 for the end. */
        final long number;

        final WireFormat.Header header;
        final WireFormat.Table table;
        /** Frames' bytes counted in {@code pipelineBytes} once admitted. */
        long bytes;

        boolean admitted;
        /** Bytes reserved in the listener's budget: 0 none yet, -1 given back for good. */
        private final java.util.concurrent.atomic.AtomicLong reserved = new java.util.concurrent.atomic.AtomicLong();

        Incoming(long number, WireFormat.Header header, WireFormat.Table table) {
            this.number = number;
            this.header = header;
            this.table = table;
        }

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
            head = pipeline.peekFirst();
            headWanted = head != null || !headersEnded;
            admitNext();
        }
        if (head != null) {
            head.done.whenComplete((m, err) -> deliverHead(head));
        }
    }

    /** Memory came back: asks for frames, and grants, again. */
    private void refill() {
        WireFormat.Control c;
        synchronized (pipeline) {
            admitNext();
            c = controlToSend();
        }
        sendControl(c);
    }

    /** The head message completed: hands it to the reader side, then admits and grants more. */
    private void deliverHead(Incoming expected) {
        WireFormat.Control c;
        synchronized (pipeline) {
            if (!headWanted || pipeline.peekFirst() != expected) {
                return;
            }
            pipeline.pollFirst();
            headWanted = false;
            if (expected.admitted) {
                admittedAhead--;
                pipelineBytes -= expected.bytes;
            }
            if (expected.number > 0) {
                delivered++;
            }
            admitNext();
            c = controlToSend();
        }
        expected.unreserve(listenerBudget);
        sendControl(c);
        Message m;
        try {
            m = expected.done.join();
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

    /** Posts the receive of the next header (always one, until the headers end). */
    private void postHeader() {
        try {
            endpoint.worker()
                    .tagRecvAsync(headerBuffer, MemoryKind.HOST, myTag, -1L, endpoint)
                    .whenComplete(this::onHeaderArrived);
        } catch (RuntimeException e) { // the endpoint closed meanwhile
            endHeaders(lostError(e), false);
        }
    }

    private void onHeaderArrived(TagInfo info, Throwable err) {
        if (err != null) {
            endHeaders(lostError(err), false);
            return;
        }
        try {
            onHeader(info);
        } catch (End e) {
            endHeaders(e.reason, e.peerClosed);
        } catch (CommException e) {
            endHeaders(e, false);
        } catch (RuntimeException e) {
            endHeaders(readFailure(e), false);
        }
    }

    /**
     * No header comes after this one: the pipeline gets its end (delivered after the messages before
     * it), and the tag is quarantined, so that whatever the peer sends there from now on is drained.
     */
    private void endHeaders(CommException cause, boolean peerClosed) {
        Incoming end = new Incoming(0, null, null);
        end.done.completeExceptionally(new End(cause, peerClosed));
        boolean deliver;
        synchronized (pipeline) {
            if (headersEnded) {
                return;
            }
            headersEnded = true;
            deliver = headWanted && pipeline.isEmpty();
            pipeline.addLast(end);
        }
        runtime.quarantineTag(myTag);
        if (deliver) {
            deliverHead(end);
        }
    }

    /**
     * The peer broke flow control (a message beyond its grant, a frame not asked for, a bad control
     * record): the comm fails at once, and what it holds is dropped, so that a flooding peer makes this
     * side hold nothing more.
     */
    private void violated(String what) {
        ended(new CommProtocolException("comm " + localAddress() + " <-> " + peerAddress() + ": " + what), false);
    }

    /** The runtime's drain found a frame on this comm's frame tag that this side never asked for. */
    private void strayFrame() {
        violated("the peer sent a frame this side had not asked for (flow control, docs/WIRE.md)");
    }

    /** How a message whose frames could not be made ready ends: its own error, or a read failure. */
    private End failedRead(RuntimeException e) {
        return new End(e instanceof CommException ce ? ce : readFailure(e), false);
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

    /** A header arrived in {@link #headerBuffer}: checks it, takes what it needs, posts the next receive. */
    private void onHeader(TagInfo info) {
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
        long number = headersReceived + 1;
        headersReceived = number;
        long granted = grantedSent;
        if (number > granted) {
            violated("the peer sent message " + number + " while granted " + granted + " (flow control: it may send "
                    + CREDIT_WINDOW + " beyond those read, docs/WIRE.md)");
            return;
        }
        long tableEnd = WireFormat.HEADER_BYTES + h.tableBytes();
        if (len == WireFormat.HEADER_BYTES && h.frameCount() > 0 && tableEnd > INLINE_LIMIT) {
            // A large table follows on the header tag, in a message of its own (bounded by max-frames).
            Arena tableArena = Arena.ofShared();
            MemorySegment table = tableArena.allocate(h.tableBytes());
            endpoint.worker().tagRecvAsync(table, myTag, -1L, endpoint).whenComplete((ti, err) -> {
                try {
                    if (err != null) {
                        endHeaders(lostError(err), false);
                    } else if (ti.length() != h.tableBytes()) {
                        endHeaders(
                                new CommProtocolException(
                                        "frame table of " + ti.length() + " bytes, header said " + h.tableBytes()),
                                false);
                    } else {
                        WireFormat.Table t = WireFormat.readTable(
                                table, 0, h.frameCount(), options.maxFrameSize(), options.maxMessageSize());
                        accept(new Incoming(number, h, t), -1);
                        postHeader();
                    }
                } catch (CommException e) {
                    endHeaders(e, false);
                } catch (RuntimeException e) {
                    endHeaders(readFailure(e), false);
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
        long inlineAt = -1;
        if ((h.flags() & WireFormat.FLAG_INLINE) != 0) {
            if (len != tableEnd + t.total()) {
                throw new CommProtocolException(
                        "inline message of " + len + " bytes, header says " + (tableEnd + t.total()));
            }
            inlineAt = tableEnd;
        } else if (len != tableEnd) {
            throw new CommProtocolException("header message of " + len + " bytes, expected " + tableEnd);
        }
        if (inlineAt >= 0 || t.total() == 0) {
            acceptComplete(number, h, t, inlineAt);
        } else {
            accept(new Incoming(number, h, t), inlineAt);
        }
        postHeader();
    }

    /**
     * Puts a message whose header (and table) arrived into the pipeline: an inline message, or one
     * without bytes, is complete at once (copied out of the header buffer); the others wait for
     * admission, which asks the peer for their frames.
     */
    private void accept(Incoming in, long inlineAt) {
        boolean complete = inlineAt >= 0 || in.table.total() == 0;
        if (complete) {
            try {
                in.done.complete(allocate(in.header, in.table, inlineAt, null, null));
            } catch (RuntimeException e) {
                in.done.completeExceptionally(failedRead(e));
            }
        }
        enqueue(in, complete);
    }

    /** Puts {@code in} at the pipeline's tail; one not {@code complete} waits for admission. */
    private void enqueue(Incoming in, boolean complete) {
        boolean deliver;
        WireFormat.Control c = null;
        synchronized (pipeline) {
            if (headersEnded) { // released meanwhile
                in.done.thenAccept(Message::close);
                return;
            }
            deliver = headWanted && pipeline.isEmpty();
            pipeline.addLast(in);
            if (!complete) {
                unadmitted.addLast(in);
                admitNext();
                c = controlToSend();
            }
        }
        sendControl(c);
        if (deliver) {
            in.done.whenComplete((m, err) -> deliverHead(in));
        }
    }

    /**
     * A message that is complete on arrival (inline, or without bytes): straight to the reader when it
     * waits for the next message and none is ahead of this one, else through the pipeline. Same order and
     * flow control as {@link #accept}, without its per-message future and second pass over the lock.
     */
    private void acceptComplete(long number, WireFormat.Header h, WireFormat.Table t, long inlineAt) {
        Message m;
        try {
            m = allocate(h, t, inlineAt, null, null);
        } catch (RuntimeException e) { // the reader gets the error at this message, in order
            Incoming in = new Incoming(number, h, t);
            in.done.completeExceptionally(failedRead(e));
            enqueue(in, true);
            return;
        }
        WireFormat.Control c;
        synchronized (pipeline) {
            if (headersEnded) { // released meanwhile
                m.close();
                return;
            }
            if (!headWanted || !pipeline.isEmpty()) {
                Incoming in = new Incoming(number, h, t);
                in.done.complete(m);
                pipeline.addLast(in);
                return;
            }
            // What deliverHead does for a message at the head: nothing is unadmitted behind an empty pipeline.
            headWanted = false;
            delivered++;
            c = controlToSend();
        }
        received(m); // the reader first: the grant can wait the few hundred nanoseconds that takes
        sendControl(c);
    }

    /**
     * With the pipeline's lock: asks the peer for the frames of the next messages, in order, while there
     * is room (depth, {@code max-in-flight}, {@code max-unclosed-bytes}, the listener's budget).
     */
    private void admitNext() {
        while (true) {
            Incoming in = unadmitted.peekFirst();
            if (in == null || admitting || released || admissionStopped || admittedAhead >= PIPELINE_DEPTH) {
                return;
            }
            if (pipelineBytes >= options.maxInFlight() && admittedAhead > 0) {
                return;
            }
            // Receiving waits while received messages hold more than max-unclosed-bytes.
            if (!scopes.admit(options.maxUnclosedBytes(), this::refill)) {
                if (headWanted && pipeline.peekFirst() == in) {
                    watchForLeak(scopes);
                }
                return;
            }
            unadmitted.pollFirst();
            long total = in.table.total();
            in.admitted = true;
            in.bytes = total;
            admittedAhead++;
            pipelineBytes += total;
            if (listenerBudget == null) {
                postFrames(in);
                continue;
            }
            admitting = true;
            listenerBudget.reserve(total, () -> onReserved(in, total));
        }
    }

    /** The listener's budget has room for {@code in}'s frames (now, or after other messages were read). */
    private void onReserved(Incoming in, long total) {
        WireFormat.Control c;
        synchronized (pipeline) {
            admitting = false;
            if (released || !in.reserved(total)) { // dropped while waiting
                listenerBudget.release(total);
                in.unreserve(listenerBudget);
                return;
            }
            postFrames(in);
            admitNext();
            c = controlToSend();
        }
        sendControl(c);
    }

    /**
     * With the pipeline's lock (frame receives must be posted in message order, as they share a tag):
     * allocates {@code in}'s frames, posts their receives, and records that the peer may send them.
     */
    private void postFrames(Incoming in) {
        List<MemorySegment> toReceive = new ArrayList<>();
        List<MemoryKind> kinds = new ArrayList<>();
        Message m;
        try {
            m = allocate(in.header, in.table, -1, toReceive, kinds);
        } catch (RuntimeException e) {
            // The reader gets this error at this message. Asking for later frames would make the peer send
            // this one's too (the request is cumulative), and the drain would report those instead.
            admissionStopped = true;
            in.done.completeExceptionally(failedRead(e));
            return;
        }
        long frameTag = myTag | UcxRuntime.FRAMES;
        WireFormat.Header h = in.header;
        CompletableFuture<?> all;
        try {
            if ((h.flags() & WireFormat.FLAG_MULTI_BUFFER) != 0) {
                long total = in.bytes;
                all = endpoint.worker()
                        .tagRecvAsync(toReceive, frameTag, -1L, endpoint)
                        .thenAccept(ti -> checkLength(ti, total, "multi-buffer frames"));
            } else {
                // A host frame from the allocator (asked for host memory, it gave host memory) is received
                // as declared host memory: UCX does not detect it per frame (docs/CONFIGURATION.md, "Declare
                // the memory"). Other kinds are left to UCX to detect.
                CompletableFuture<?>[] each = new CompletableFuture<?>[toReceive.size()];
                for (int i = 0; i < each.length; i++) {
                    MemorySegment frame = toReceive.get(i);
                    long size = frame.byteSize();
                    int index = i;
                    boolean host = kinds.get(i) == MemoryKind.HOST && frame.isNative();
                    each[i] = (host
                                    ? endpoint.worker().tagRecvAsync(frame, MemoryKind.HOST, frameTag, -1L, endpoint)
                                    : endpoint.worker().tagRecvAsync(frame, frameTag, -1L, endpoint))
                            .thenAccept(ti -> checkLength(ti, size, "frame " + index));
                }
                all = CompletableFuture.allOf(each);
            }
        } catch (RuntimeException e) { // the endpoint closed meanwhile
            admissionStopped = true;
            m.close();
            in.done.completeExceptionally(new End(lostError(e), false));
            return;
        }
        framesWanted = in.number;
        all.whenComplete((v, err) -> {
            if (err != null) {
                m.close();
                Throwable cause = Failures.unchecked(err);
                in.done.completeExceptionally(
                        new End(cause instanceof CommProtocolException p ? p : lostError(cause), false));
            } else {
                in.done.complete(m);
            }
        });
    }

    /**
     * Allocates a message's frames in a scope of their own and fills the inline ones from the header
     * buffer at {@code inlineAt}; or, with {@code toReceive}, lists the non-empty ones to receive.
     */
    private Message allocate(
            WireFormat.Header h,
            WireFormat.Table t,
            long inlineAt,
            List<MemorySegment> toReceive,
            List<MemoryKind> toReceiveKinds) {
        Arena scope = scopes.forMessage(t.total(), h.frameCount());
        Frame[] frames = new Frame[h.frameCount()];
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
                frames[i] = new Frame(seg, t.kinds()[i]);
                if (inlineAt >= 0) {
                    if (t.kinds()[i] != MemoryKind.HOST) {
                        throw new CommProtocolException("inline frame " + i + " is " + t.kinds()[i] + " memory");
                    }
                    MemorySegment.copy(headerBuffer, at, seg, 0, t.sizes()[i]);
                    at += t.sizes()[i];
                } else if (toReceive != null && t.sizes()[i] > 0) {
                    toReceive.add(seg);
                    toReceiveKinds.add(t.kinds()[i]);
                }
            }
        } catch (RuntimeException e) {
            scope.close();
            throw e;
        }
        return Message.received(List.of(frames), scope); // List.of: Message keeps it, uncopied
    }

    /**
     * With the pipeline's lock: the control record to send now, or null. A grant goes once
     * {@link #GRANT_BATCH} messages reached the reader since the last, and only while received messages
     * hold less than {@code max-unclosed-bytes} (a reader that keeps what it reads stops its peer); a
     * request for frames goes at once.
     */
    private WireFormat.Control controlToSend() {
        if (released) {
            return null;
        }
        long granted = grantedSent;
        // After the close marker or an error no message may come: frames of earlier ones still may.
        if (!headersEnded && delivered + CREDIT_WINDOW - grantedSent >= GRANT_BATCH) {
            if (scopes.admit(options.maxUnclosedBytes(), this::refill)) {
                granted = delivered + CREDIT_WINDOW;
            } else if (headWanted && pipeline.isEmpty()) {
                // The reader waits for a message its peer may not send until memory comes back.
                watchForLeak(scopes);
            }
        }
        if (granted == grantedSent && framesWanted == framesWantedSent) {
            return null;
        }
        grantedSent = granted;
        framesWantedSent = framesWanted;
        return new WireFormat.Control(granted, framesWanted);
    }

    /** Sends a control record to the peer (cumulative counts: the peer keeps the largest it saw). */
    private void sendControl(WireFormat.Control c) {
        if (c == null) {
            return;
        }
        MemorySegment b = controlOut.take();
        try {
            if (b == null) { // all in flight: from the heap, which the endpoint stages
                byte[] rec = new byte[WireFormat.CONTROL_BYTES];
                WireFormat.writeControl(MemorySegment.ofArray(rec), c.granted(), c.framesUpTo());
                endpoint.tagSendAsync(rec, peerTag | UcxRuntime.CONTROL);
                return;
            }
            WireFormat.writeControl(b, c.granted(), c.framesUpTo());
            endpoint.tagSendAsync(b, MemoryKind.HOST, peerTag | UcxRuntime.CONTROL)
                    .whenComplete((v, err) -> controlOut.giveBack(b));
        } catch (RuntimeException e) {
            // Closed meanwhile (the endpoint, or the buffers' arena with it): the comm is ending, nothing
            // more to grant. The buffer is not sent: free again.
            controlOut.giveBack(b);
        }
    }

    private static void checkLength(TagInfo ti, long expected, String what) {
        if (ti.length() != expected) {
            throw new CommProtocolException(what + ": received " + ti.length() + " bytes, the header said " + expected);
        }
    }

    // ------------------------------------------------------------------ sending

    /** A message on its way out: its header waits for credit, its frames for the peer's request. */
    private static final class Outgoing {
        final MemorySegment header;
        /** The frame table when it travels apart (more than 511 frames), else null. */
        final MemorySegment table;
        /** What goes on the frame tag: one single-segment list per frame, or one gathered list ({@code multi}). */
        final List<List<MemorySegment>> frames;
        /**
         * Per entry of {@link #frames}: {@link MemoryKind#HOST} for a native host frame, which UCX is told
         * is host memory instead of detecting it; null to leave it to UCX (other kinds, heap frames, which
         * the endpoint stages as host memory anyway, and gathered lists).
         */
        final List<MemoryKind> declared;

        final boolean multi;
        /** The comm's native buffer the header was built in (an inline message), or null. */
        final MemorySegment pooled;

        final CompletableFuture<Void> result = new CompletableFuture<>();
        final List<CompletableFuture<Void>> sends = new ArrayList<>(2);
        /** Its number once its header went, counting from 1. */
        long number;

        Outgoing(
                MemorySegment header,
                MemorySegment table,
                List<List<MemorySegment>> frames,
                List<MemoryKind> declared,
                boolean multi,
                MemorySegment pooled) {
            this.header = header;
            this.table = table;
            this.frames = frames;
            this.declared = declared;
            this.multi = multi;
            this.pooled = pooled;
        }
    }

    /** Messages whose headers went (guarded by sendLock), and the most the peer granted. */
    private long headersSent;

    private long creditFromPeer = CREDIT_WINDOW;
    /** The last message whose frames the peer asked for. */
    private long framesAskedUpTo;
    /** Messages waiting for credit, in order (sendLock). */
    private final ArrayDeque<Outgoing> waitingCredit = new ArrayDeque<>();
    /** Messages whose header went and whose frames wait for the peer's request, in order (sendLock). */
    private final ArrayDeque<Outgoing> waitingRequest = new ArrayDeque<>();
    /** Control records that raised a count, and those that did not (overtaken, or a hostile repeat). */
    private long controlAdvances;

    private long controlStale;
    /** Records that change nothing tolerated beyond those that did. */
    static final int STALE_CONTROL_ALLOWANCE = 16;
    /** The close marker, once asked for while messages still waited for credit (sendLock). */
    private CompletableFuture<Void> closeMarker;

    /** Native buffers for inline messages, {@link #INLINE_LIMIT} bytes each. */
    private final SendBuffers inlineBuffers;
    /** The most inline buffers a comm makes; an inline message beyond them (a burst of writes) is built on the heap. */
    static final int INLINE_BUFFERS = 4;

    @Override
    protected CompletableFuture<Void> send(Message message, boolean callerWaits) {
        List<Frame> frames = message.frames();
        int n = frames.size();
        long tableEnd = WireFormat.HEADER_BYTES + (long) n * WireFormat.ENTRY_BYTES;
        long payload = message.byteSize();
        boolean allHost = true;
        for (int i = 0; i < n && allHost; i++) {
            allHost = frames.get(i).kind() == MemoryKind.HOST;
        }
        boolean inline = allHost && tableEnd + payload <= INLINE_LIMIT;
        // UCX's iov datatype wants one memory type for all its parts: mixed messages go frame by frame.
        boolean multi = !inline && options.multiBuffer() && allHost;
        int flags = inline ? WireFormat.FLAG_INLINE : multi ? WireFormat.FLAG_MULTI_BUFFER : 0;
        boolean tableApart = !inline && tableEnd > INLINE_LIMIT;
        long headBytes = tableApart ? WireFormat.HEADER_BYTES : inline ? tableEnd + payload : tableEnd;
        // An inline message is built in one of the comm's native buffers, sent from there as host memory;
        // otherwise (or when they are all in flight) in heap memory, which the endpoint stages itself.
        MemorySegment pooled = inline ? inlineBuffers.take() : null;
        MemorySegment hs =
                pooled != null ? pooled.asSlice(0, headBytes) : MemorySegment.ofArray(new byte[(int) headBytes]);
        WireFormat.writeHeader(hs, 0, WireFormat.TYPE_MESSAGE, flags, n);
        MemorySegment table = hs;
        long tableAt = WireFormat.HEADER_BYTES;
        if (tableApart) {
            table = MemorySegment.ofArray(new byte[(int) (tableEnd - WireFormat.HEADER_BYTES)]);
            tableAt = 0;
        }
        WireFormat.writeTable(table, tableAt, frames);
        List<List<MemorySegment>> toSend = inline ? List.of() : new ArrayList<>();
        List<MemoryKind> declared = inline ? List.of() : new ArrayList<>();
        if (inline) {
            long at = tableEnd;
            for (Frame f : frames) {
                MemorySegment.copy(f.segment(), 0, hs, at, f.size());
                at += f.size();
            }
        } else if (multi) {
            List<MemorySegment> segs = new ArrayList<>(n);
            for (Frame f : frames) {
                if (f.size() > 0) {
                    segs.add(f.segment());
                }
            }
            if (!segs.isEmpty()) {
                toSend.add(segs);
                declared.add(null);
            }
        } else {
            // A frame the writer made as host memory is host memory (tcp:// reads it as such too): UCX is
            // told so instead of detecting it per send. On a machine with CUDA, UCX's detection can take
            // its slow path on every operation for a buffer a JVM thread malloc'd (docs/CONFIGURATION.md).
            for (Frame f : frames) {
                if (f.size() > 0) {
                    toSend.add(List.of(f.segment()));
                    declared.add(f.kind() == MemoryKind.HOST && f.segment().isNative() ? MemoryKind.HOST : null);
                }
            }
        }
        Outgoing o = new Outgoing(hs, tableApart ? table : null, toSend, declared, multi, pooled);
        boolean gone;
        synchronized (sendLock) {
            if (released) {
                return CompletableFuture.failedFuture(closedError("write to"));
            }
            sending++;
            if (waitingCredit.isEmpty() && headersSent < creditFromPeer) {
                gone = sendHeader(o);
            } else {
                waitingCredit.addLast(o);
                gone = false;
            }
        }
        if (inline && gone) {
            // The writer's frames were copied into the header: its memory is free now, which is all the
            // future promises (Comm#writeAsync). The writer goes on without waiting for UCX's completion
            // on the progress thread (a hand-off between threads per message); the comm's close still
            // waits for the send, and a send that fails still fails the comm. A message that waits for
            // credit completes when sent, so that a peer that does not read still holds its writer back.
            o.result.complete(null);
        }
        return o.result;
    }

    /**
     * A message's sends completed, failed or never went ({@code err}): its inline buffer is free, and the
     * writer's future completes. A failure while the comm is open loses the comm; once it is closed (the
     * peer's close, or ours canceled the send) the writer learns why it closed.
     */
    private void finish(Outgoing o, Throwable err) {
        inlineBuffers.giveBack(o.pooled);
        sent();
        if (err == null) {
            o.result.complete(null);
            return;
        }
        CommClosedException e = isClosed()
                ? closedError("write to")
                : new CommClosedException(
                        "comm " + localAddress() + " <-> " + peerAddress() + " lost while writing: "
                                + Failures.describe(err),
                        Failures.unchecked(err));
        failed(e);
        o.result.completeExceptionally(e);
    }

    /**
     * With sendLock: sends a message's header (and table); its frames wait for the peer's request.
     *
     * @return whether the header's sends were posted (false: a post failed, and the message fails)
     */
    private boolean sendHeader(Outgoing o) {
        o.number = ++headersSent;
        try {
            o.sends.add(
                    o.pooled != null
                            ? endpoint.tagSendAsync(o.header, MemoryKind.HOST, peerTag)
                            : endpoint.tagSendAsync(o.header, peerTag));
            if (o.table != null) {
                o.sends.add(endpoint.tagSendAsync(o.table, peerTag));
            }
        } catch (RuntimeException e) {
            failWhenPostedEnd(o, e);
            return false;
        }
        if (o.frames.isEmpty()) {
            finishWhenSent(o);
        } else if (framesAskedUpTo >= o.number) {
            sendFrames(o);
        } else {
            waitingRequest.addLast(o);
        }
        return true;
    }

    /** With sendLock: sends a message's frames on the peer's frame tag, which asked for them. */
    private void sendFrames(Outgoing o) {
        long frameTag = peerTag | UcxRuntime.FRAMES;
        try {
            for (int i = 0; i < o.frames.size(); i++) {
                List<MemorySegment> f = o.frames.get(i);
                MemoryKind kind = o.declared.get(i);
                o.sends.add(
                        o.multi
                                ? endpoint.tagSendAsync(f, frameTag)
                                : kind != null
                                        ? endpoint.tagSendAsync(f.get(0), kind, frameTag)
                                        : endpoint.tagSendAsync(f.get(0), frameTag));
            }
        } catch (RuntimeException e) {
            failWhenPostedEnd(o, e);
            return;
        }
        finishWhenSent(o);
    }

    /**
     * A post failed part-way through a message: it fails with {@code e}, but only once the sends already
     * posted have ended. Until then UCX may still read their buffers, and the writer frees them (unmaps a
     * file, closes an arena) when the write's future completes.
     */
    private void failWhenPostedEnd(Outgoing o, RuntimeException e) {
        // Called with sendLock held, and the sends may have ended already: the comm's failure (its release
        // takes other locks and fails the readers, whose callbacks run there) happens on another thread.
        CompletableFuture<Void> posted = o.sends.isEmpty() ? CompletableFuture.completedFuture(null) : allSends(o);
        posted.whenComplete((v, err) -> CommTimers.elsewhere(() -> finish(o, e)));
    }

    private void finishWhenSent(Outgoing o) {
        allSends(o).whenComplete((v, err) -> finish(o, err));
    }

    /** Completes when every send posted for {@code o} so far has ended. */
    private static CompletableFuture<Void> allSends(Outgoing o) {
        return o.sends.size() == 1
                ? o.sends.get(0)
                : CompletableFuture.allOf(o.sends.toArray(CompletableFuture<?>[]::new));
    }

    /** Posts the receive of the next control record (always one, until the endpoint closes). */
    private void postControl() {
        // A receive that completes at once (records already here) is handled in this loop, not by a
        // nested call: a peer's burst of records must not deepen the stack.
        while (true) {
            CompletableFuture<TagInfo> f;
            try {
                f = endpoint.worker()
                        .tagRecvAsync(controlBuffer, MemoryKind.HOST, myTag | UcxRuntime.CONTROL, -1L, endpoint);
            } catch (RuntimeException e) {
                return; // the endpoint closed: nothing more to send
            }
            if (!f.isDone()) {
                f.whenComplete((info, err) -> {
                    if (onControl(info, err)) {
                        postControl();
                    }
                });
                return;
            }
            TagInfo info = null;
            Throwable err = null;
            try {
                info = f.join();
            } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
                err = e;
            }
            if (!onControl(info, err)) {
                return;
            }
        }
    }

    /**
     * A control record arrived: more credit, or a request for frames; sends what waited for it.
     *
     * @return whether to receive the next record (false: the endpoint failed or the peer broke the rules)
     */
    private boolean onControl(TagInfo info, Throwable err) {
        if (err != null) {
            return false; // the endpoint closed or failed: the comm learns it elsewhere
        }
        WireFormat.Control c;
        try {
            c = WireFormat.readControl(controlBuffer, info.length());
        } catch (CommProtocolException e) {
            violated(e.getMessage());
            return false;
        }
        String wrong = null;
        synchronized (sendLock) {
            boolean advances = c.granted() > creditFromPeer || c.framesUpTo() > framesAskedUpTo;
            if (c.framesUpTo() > headersSent) {
                wrong = "the peer asked for the frames of message " + c.framesUpTo() + "; " + headersSent
                        + " were sent";
            } else if (c.granted() > headersSent + CREDIT_WINDOW) {
                wrong = "the peer granted " + c.granted() + " messages; it cannot have read more than the "
                        + headersSent + " sent";
            } else if (!advances && ++controlStale > controlAdvances + STALE_CONTROL_ALLOWANCE) {
                // An honest peer's records each raise a count (one that was overtaken does not): a
                // peer repeating them only keeps this side's progress thread busy.
                wrong = "the peer sent " + controlStale + " flow control records that changed nothing";
            } else if (!released) {
                if (advances) {
                    controlAdvances++;
                }
                // Cumulative counts: records may pass each other, the largest wins.
                creditFromPeer = Math.max(creditFromPeer, c.granted());
                framesAskedUpTo = Math.max(framesAskedUpTo, c.framesUpTo());
                while (!waitingRequest.isEmpty() && waitingRequest.peekFirst().number <= framesAskedUpTo) {
                    sendFrames(waitingRequest.pollFirst());
                }
                while (!waitingCredit.isEmpty() && headersSent < creditFromPeer) {
                    sendHeader(waitingCredit.pollFirst());
                }
                if (waitingCredit.isEmpty() && closeMarker != null && !closeSent && !released) {
                    sendCloseMarker();
                }
            }
        }
        if (wrong != null) {
            violated(wrong);
            return false;
        }
        return true;
    }

    @Override
    protected CompletableFuture<Void> sendClose() {
        CompletableFuture<Void> marker;
        CompletableFuture<Void> before;
        synchronized (sendLock) {
            if (released) {
                return CompletableFuture.failedFuture(closedError("close"));
            }
            closeMarker = new CompletableFuture<>();
            marker = closeMarker;
            drained = new CompletableFuture<>();
            before = drained;
            if (waitingCredit.isEmpty()) {
                sendCloseMarker();
            }
            if (sending == 0) {
                drained.complete(null);
            }
        }
        return CompletableFuture.allOf(marker, before).thenCompose(v -> endpoint.flushAsync());
    }

    /** With sendLock: the close marker goes, after every header (it needs no credit). */
    private void sendCloseMarker() {
        byte[] head = new byte[WireFormat.HEADER_BYTES];
        WireFormat.writeHeader(MemorySegment.ofArray(head), 0, WireFormat.TYPE_CLOSE, 0, 0);
        closeSent = true;
        CompletableFuture<Void> marker = closeMarker;
        try {
            endpoint.tagSendAsync(head, peerTag).whenComplete((v, err) -> {
                if (err != null) {
                    marker.completeExceptionally(err);
                } else {
                    marker.complete(null);
                }
            });
        } catch (RuntimeException e) {
            marker.completeExceptionally(e);
        }
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

    /** With sendLock, once released: messages that wait for credit or a request fail (they never go). */
    private List<Outgoing> takeWaiting() {
        List<Outgoing> w = new ArrayList<>(waitingCredit);
        w.addAll(waitingRequest);
        waitingCredit.clear();
        waitingRequest.clear();
        return w;
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
     * How long a closed comm that lingers (a close marker went, either way) waits after the peer's
     * endpoint went away (its handshake socket ended) before closing its own. Both ends of a UCX 1.13 tcp
     * connection that close at about the same time, each telling the other it sends no more, crash the
     * side whose socket was full: its endpoint, left to receive only, is freed inside its own receive
     * handler when the peer's notice comes, and UCX then handles a write event on it
     * (uct_tcp_iface_handle_events; measured, docs/WIRE.md section 3). Once the peer's notice has been
     * read, this side's endpoint sends only and closes without one.
     */
    static final Duration PEER_CLOSE_GRACE = Duration.ofMillis(500);

    /**
     * How long a comm whose peer closed while this side's messages were still in flight waits for the
     * peer's endpoint to go (the closer waits for this side's in turn, up to its linger time) before
     * closing its own by force: long enough for a peer that closes its endpoint at once, well below the
     * closer's linger, so that an honest peer's close and this side's do not coincide. (A peer that
     * times its own close to this wait can still make them coincide: docs/WIRE.md, section 3.)
     */
    static final Duration PEER_CLOSE_WAIT = Duration.ofSeconds(2);

    /**
     * After this side's close marker left, the endpoint stays until the peer has read the marker and
     * closed its side (its disconnect ends this one), or until the linger time: closing at once would
     * make UCX drop messages still waiting in the peer's unexpected queue. When the peer's marker came
     * while messages of ours were in flight, this side's endpoint closes after the peer's
     * ({@link #PEER_CLOSE_WAIT}, {@link #PEER_CLOSE_GRACE}). Without a marker (the peer died or aborted,
     * or the comm failed) it closes at once.
     */
    @Override
    protected void release(boolean graceful) {
        dropPipeline();
        CloseMode mode;
        List<Outgoing> unsent;
        CompletableFuture<Void> marker = null;
        synchronized (sendLock) {
            if (released) {
                return;
            }
            released = true;
            unsent = takeWaiting();
            if (closeMarker != null && !closeSent) {
                marker = closeMarker;
            }
        }
        for (Outgoing o : unsent) {
            finish(o, closedError("write to"));
        }
        if (marker != null) {
            marker.completeExceptionally(closedError("close"));
        }
        synchronized (sendLock) {
            if (graceful && closeSent && linger(linger())) {
                return;
            }
            // The peer's close marker came while messages of ours were still in flight: the peer reads
            // nothing after its close, so they can never complete (UCX would wait for receives that
            // never come); a forced close fails them, once the peer's endpoint has gone (or after
            // PEER_CLOSE_WAIT) rather than when the peer closes it, and long before the close timeout.
            if (graceful && sending > 0 && linger(PEER_CLOSE_WAIT)) {
                return;
            }
            mode = graceful && sending == 0 ? CloseMode.FLUSH : CloseMode.FORCE;
        }
        // Without the peer's close marker (it died or aborted: its handshake socket ended, or UCX failed
        // the endpoint) this side closes at once: waiting would leave transfers running into a dead
        // socket, and UCX 1.13 then completes a zero-copy send twice (an assertion in uct_iface.h aborts
        // the process), which it does not when the endpoint is closed first.
        closeEndpoint(mode);
    }

    /** Frees messages received ahead that no reader will get; ones still arriving are freed when they do. */
    private void dropPipeline() {
        List<Incoming> dropped;
        synchronized (pipeline) {
            headersEnded = true;
            dropped = new ArrayList<>(pipeline);
            pipeline.clear();
            unadmitted.clear();
            headWanted = false;
        }
        for (Incoming in : dropped) {
            in.unreserve(listenerBudget);
            in.done.thenAccept(Message::close);
        }
    }

    /**
     * Keeps the endpoint until the peer's goes ({@link #afterEnd}) or {@code atMost} has passed; false
     * when the comm context is closing (close now). The peer's endpoint may have gone already: then the
     * grace starts here (peerGone and lingering are both volatile, and each side checks the other's
     * after writing its own, so watchControl's afterEnd or this sees both).
     */
    private boolean linger(Duration atMost) {
        if (!runtime.lingering(this)) {
            return false;
        }
        lingering = true;
        CommTimers.after(atMost, this::endLinger);
        if (peerGone) {
            CommTimers.after(PEER_CLOSE_GRACE, this::endLinger);
        }
        return true;
    }

    private Duration linger() {
        Duration t = options.closeTimeout();
        return t.compareTo(Duration.ofSeconds(30)) > 0 ? t : Duration.ofSeconds(30);
    }

    /**
     * The connection ended after this side's close. If this closed comm lingered, the peer's endpoint
     * went (or UCX failed ours): close ours. If it was not released yet (its close waited for messages
     * the peer never gave credit for or never asked the frames of, or for its own marker or flush), the
     * peer is gone and nothing queued can leave: it lets go now, failing what waits. If its marker went
     * and the peer's endpoint is gone, it closes as any comm whose marker went (the linger, ending
     * {@link #PEER_CLOSE_GRACE} after the peer's endpoint went: the ordering that avoids UCX 1.13's
     * simultaneous-close crash); otherwise (no marker went, or UCX failed this endpoint) at once, as a
     * comm whose peer dies while open. A close marker of the peer's (the peer closed too) changes nothing
     * here: a marker of ours that waits for credit then waits until the peer's endpoint goes.
     */
    @Override
    protected void afterEnd(boolean peerClosed) {
        if (!peerClosed && !released) {
            boolean markerWent;
            synchronized (sendLock) {
                markerWent = closeSent;
            }
            release(markerWent && peerGone);
            return;
        }
        if (lingering) {
            // No grace when the comm context closes or the JVM exits: their owner is done, and the exit
            // hook waits for runtimes to be let go only briefly (UcxRuntimes.EXIT_WAIT).
            if (peerGone && !runtime.endsLingersNow()) {
                CommTimers.after(PEER_CLOSE_GRACE, this::endLinger);
            } else {
                endLinger();
            }
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
                // A close UCX did not finish in time (the core's guard) may leave requests that still
                // read the inline buffers or write the header buffer: their memory is then left alone.
                finish(!(e != null && Failures.unchecked(e) instanceof UcxTimeoutException));
            });
        } catch (RuntimeException e) {
            TcpTransport.closeQuietly(control);
            finish(true);
        }
    }

    private void finish(boolean freeBuffers) {
        // The header buffer may be the target of a receive, and an inline buffer the source of a send,
        // until the endpoint is closed.
        CommTimers.elsewhere(() -> {
            inlineBuffers.stop();
            controlOut.stop();
            if (freeBuffers) {
                headerArena.close();
            } else {
                LOG.warn(
                        "{}: UCX did not finish closing the endpoint; its {} header and inline buffers are kept",
                        this,
                        INLINE_LIMIT + WireFormat.CONTROL_BYTES + inlineBuffers.bytesMade() + controlOut.bytesMade());
            }
            runtime.releaseTag(myTag);
            runtime.notLingering(this);
            runtime.release();
            finished = true;
        });
    }

    long myTag() {
        return myTag;
    }

    /** Messages of this side waiting for the peer's credit (tests). */
    int waitingForCredit() {
        synchronized (sendLock) {
            return waitingCredit.size();
        }
    }

    /** Whether this comm has let go of its endpoint, tag and runtime (tests). */
    boolean finished() {
        return finished;
    }

    /** Message headers this side received so far (tests). */
    long headersReceived() {
        return headersReceived;
    }
}
