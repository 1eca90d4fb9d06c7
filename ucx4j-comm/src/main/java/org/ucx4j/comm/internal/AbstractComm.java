package org.ucx4j.comm.internal;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommTimeoutException;
import org.ucx4j.comm.Message;

/**
 * What every built-in transport shares: the read side (an inbox of at most one message received ahead,
 * waiting readers, reads with a timeout that lose nothing), the close state machine, and the mapping
 * of transport failures to {@link CommClosedException}. A transport implements how one message is
 * received ({@link #receiveOne()}, reporting through {@link #received} or {@link #ended}), how one is
 * sent, how the close marker is sent, and how its resources are released.
 */
abstract class AbstractComm implements Comm {
    private static final Logger LOG = LoggerFactory.getLogger(AbstractComm.class);
    /** Messages received ahead of reads. */
    private static final int READ_AHEAD = 1;

    private enum State {
        OPEN,
        CLOSING,
        CLOSED
    }

    protected final CommOptions options;
    private final URI local;
    private final URI peer;
    private final String peerIdentity;
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Message> inbox = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<Message>> readers = new ArrayDeque<>();
    private CommException readEnd;
    private boolean receiving;
    private volatile State state = State.OPEN;
    private volatile CommException closedBecause;
    /** A leak check is scheduled; guarded by {@code this}. */
    private boolean leakWatch;

    AbstractComm(CommOptions options, URI local, URI peer, String peerIdentity) {
        this.options = options;
        this.local = local;
        this.peer = peer;
        this.peerIdentity = peerIdentity;
    }

    // ------------------------------------------------------------------ transport hooks

    /** Starts receiving one message; reports it with {@link #received} or the end with {@link #ended}. */
    protected abstract void receiveOne();

    /**
     * Sends one message after every message sent before it; the future completes when its memory is
     * free. {@code callerWaits}: the caller blocks on the future anyway, so the transport may do the
     * work on the caller's thread.
     */
    protected abstract CompletableFuture<Void> send(Message message, boolean callerWaits);

    /** Sends the close marker after every message sent before it. */
    protected abstract CompletableFuture<Void> sendClose();

    /** Frees the connection; {@code graceful} after a close marker went or came, false for abort or failure. */
    protected abstract void release(boolean graceful);

    /**
     * The connection ended while the comm was already closed on this side: a lingering close may finish,
     * and a close whose marker still waits may give up.
     *
     * @param peerClosed whether the peer's close marker ended it (false: the peer is gone or the
     *     connection failed)
     */
    protected void afterEnd(boolean peerClosed) {}

    /** Waits for a future; transports whose progress needs the caller (UCX caller mode) override it. */
    protected <T> T await(CompletableFuture<T> future, long timeoutNanos) throws TimeoutException {
        try {
            return timeoutNanos < 0 ? future.get() : future.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException("interrupted", e);
        } catch (ExecutionException e) {
            throw Failures.unchecked(e.getCause());
        }
    }

    // ------------------------------------------------------------------ reporting from the transport

    /** One message arrived. */
    protected final void received(Message m) {
        CompletableFuture<Message> reader = null;
        boolean drop = false;
        boolean next = false;
        MessageScopes budget = scopes();
        lock.lock();
        try {
            receiving = false;
            if (readEnd != null) {
                drop = true;
            } else {
                reader = nextLiveReader();
                if (reader == null) {
                    inbox.add(m);
                }
                // The next receive starts here, under this lock, when pump() would start it at once: one
                // pass over the lock per message instead of three (pump() still decides the other cases).
                next = wantsMore() && (budget == null || budget.roomFor(options.maxUnclosedBytes()));
                receiving = next;
            }
        } finally {
            lock.unlock();
        }
        if (drop) {
            m.close();
            return;
        }
        while (reader != null && !reader.complete(m)) {
            // That reader was cancelled (or timed out) at this instant: the next one that still waits gets
            // the message, else the inbox keeps it (in order: readers wait only while the inbox is empty).
            // A receive decided above as if the message had been taken waits if the inbox is now full.
            lock.lock();
            try {
                reader = nextLiveReader();
                if (reader == null) {
                    inbox.add(m);
                    if (next && !mayReceive()) {
                        next = false;
                        receiving = false;
                    }
                }
            } finally {
                lock.unlock();
            }
        }
        if (next) {
            receiveNext();
        } else {
            pump();
        }
    }

    /**
     * With the lock: the first waiting reader whose future is not done, or null. A reader's future that
     * its caller cancelled, or completed itself, stays in the queue until here: skipped, it neither
     * holds a message back from the readers behind it nor reorders the inbox.
     */
    private CompletableFuture<Message> nextLiveReader() {
        CompletableFuture<Message> r;
        do {
            r = readers.poll();
        } while (r != null && r.isDone());
        return r;
    }

    /**
     * No more messages will arrive: the peer closed ({@code peerClosed}) or the connection failed.
     * Messages already received stay readable; reads after them fail with {@code cause}.
     */
    protected final void ended(CommException cause, boolean peerClosed) {
        // Closed before the reads end: a reader that sees the end must find isClosed() true.
        boolean wasOpen = state != State.CLOSED;
        if (wasOpen) {
            markClosed(cause);
        }
        List<CompletableFuture<Message>> failed;
        lock.lock();
        try {
            receiving = false;
            if (readEnd == null) {
                readEnd = cause;
            }
            failed = new ArrayList<>(readers);
            readers.clear();
        } finally {
            lock.unlock();
        }
        for (CompletableFuture<Message> r : failed) {
            r.completeExceptionally(readEnd);
        }
        if (wasOpen) {
            if (!peerClosed) {
                LOG.debug("{}: {}", this, cause.getMessage());
            }
            release(peerClosed);
        } else {
            afterEnd(peerClosed);
        }
    }

    /** The connection broke while sending: the comm is lost. */
    protected final void failed(Throwable cause) {
        CommClosedException e = cause instanceof CommClosedException c
                ? c
                : new CommClosedException(
                        "comm " + local + " <-> " + peer + " lost: " + Failures.describe(cause), cause);
        ended(e, false);
    }

    private void markClosed(CommException cause) {
        if (closedBecause == null) {
            closedBecause = cause;
        }
        state = State.CLOSED;
    }

    // ------------------------------------------------------------------ reads

    @Override
    public CompletableFuture<Message> readAsync() {
        CompletableFuture<Message> f = new CompletableFuture<>();
        Message ready;
        CommException end = null;
        boolean more;
        lock.lock();
        try {
            ready = inbox.poll();
            if (ready == null) {
                if (readEnd != null) {
                    end = readEnd;
                } else {
                    readers.add(f);
                }
            }
            more = wantsMore(); // usually not: the message this reader waits for is on its way
        } finally {
            lock.unlock();
        }
        if (ready != null) {
            f.complete(ready);
        } else if (end != null) {
            f.completeExceptionally(end);
        }
        if (more) {
            pump();
        }
        return f;
    }

    @Override
    public Message read() {
        return readWithin(-1);
    }

    @Override
    public Message read(Duration timeout) {
        return readWithin(Math.max(0, timeout.toNanos()));
    }

    private Message readWithin(long nanos) {
        CompletableFuture<Message> f = readAsync();
        try {
            return await(f, nanos);
        } catch (TimeoutException e) {
            boolean withdrawn;
            lock.lock();
            try {
                withdrawn = readers.remove(f);
            } finally {
                lock.unlock();
            }
            if (withdrawn || !f.isDone()) {
                f.cancel(false);
                throw new CommTimeoutException(
                        "no message on " + this + " within " + Duration.ofNanos(nanos) + " (the comm stays open)");
            }
            return f.join();
        }
    }

    /**
     * The arenas this comm receives into, whose budget ({@code max-unclosed-bytes}) gates receiving;
     * null: not gated.
     */
    protected MessageScopes scopes() {
        return null;
    }

    /** With the lock: whether the next message should be received now (a reader waits, or read-ahead has room). */
    private boolean wantsMore() {
        return !receiving && mayReceive();
    }

    /** With the lock: whether the reads have not ended and a reader waits or the read-ahead has room. */
    private boolean mayReceive() {
        return readEnd == null && (!readers.isEmpty() || inbox.size() < READ_AHEAD);
    }

    /** Starts receiving the next message when a reader waits or the read-ahead has room. */
    private void pump() {
        lock.lock();
        try {
            if (!wantsMore()) {
                return;
            }
        } finally {
            lock.unlock();
        }
        MessageScopes budget = scopes();
        if (budget != null && !budget.admit(options.maxUnclosedBytes(), this::pump)) {
            watchForLeak(budget);
            return;
        }
        lock.lock();
        try {
            if (!wantsMore()) {
                return;
            }
            receiving = true;
        } finally {
            lock.unlock();
        }
        receiveNext();
    }

    /** With {@code receiving} set by this thread: asks the transport for the next message. */
    private void receiveNext() {
        try {
            receiveOne();
        } catch (Throwable t) {
            failed(t);
        }
    }

    /**
     * Receiving waits for memory to come back: if a reader still waits for this comm after the connect
     * timeout, and the memory has not come back, the comm fails with an error that names the leak.
     */
    protected final void watchForLeak(MessageScopes budget) {
        synchronized (this) {
            if (leakWatch) {
                return;
            }
            leakWatch = true;
        }
        CommTimers.after(options.connectTimeout(), () -> {
            synchronized (this) {
                leakWatch = false;
            }
            boolean readerWaits;
            lock.lock();
            try {
                readerWaits = !readers.isEmpty() && inbox.isEmpty() && readEnd == null;
            } finally {
                lock.unlock();
            }
            if (!readerWaits || budget.admit(options.maxUnclosedBytes(), null)) {
                pump();
                return;
            }
            ended(
                    new CommException("comm " + local + " <-> " + peer + " stopped receiving: received messages"
                            + " not closed hold " + budget.held() + " bytes, above max-unclosed-bytes ("
                            + options.maxUnclosedBytes() + "), for " + options.connectTimeout()
                            + "; close every Message you read (or raise max-unclosed-bytes)"),
                    false);
        });
    }

    /** Transports call this once the comm is set up, to receive the first message ahead. */
    protected final void start() {
        pump();
    }

    // ------------------------------------------------------------------ writes

    @Override
    public CompletableFuture<Void> writeAsync(Message message) {
        return write(message, false);
    }

    private CompletableFuture<Void> write(Message message, boolean callerWaits) {
        java.util.Objects.requireNonNull(message, "message");
        if (state != State.OPEN) {
            return CompletableFuture.failedFuture(closedError("write to"));
        }
        if (message.byteSize() > options.maxMessageSize()) {
            // The peer would refuse it and fail the comm (with the same default); refuse it here, before
            // any byte goes, and keep the comm.
            return CompletableFuture.failedFuture(new CommException("message of " + message.frameCount()
                    + " frames and " + message.byteSize() + " bytes not written to " + peerAddress()
                    + ": max-message-size is " + options.maxMessageSize()));
        }
        CompletableFuture<Void> f;
        try {
            f = send(message, callerWaits);
        } catch (CommException e) {
            return CompletableFuture.failedFuture(e);
        } catch (Throwable t) {
            failed(t);
            return CompletableFuture.failedFuture(closedError("write to"));
        }
        return f;
    }

    @Override
    public void write(Message message) {
        try {
            await(write(message, true), -1);
        } catch (TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------ close

    @Override
    public void close() {
        if (state != State.OPEN) {
            return;
        }
        synchronized (this) {
            if (state != State.OPEN) {
                return;
            }
            state = State.CLOSING;
        }
        CommClosedException cause =
                new CommClosedException("comm " + local + " <-> " + peer + " was closed on this side");
        markClosed(cause);
        endReads(cause);
        CompletableFuture<Void> marker;
        try {
            marker = sendClose();
        } catch (Throwable t) {
            marker = CompletableFuture.failedFuture(t);
        }
        // The connection goes when the marker has left (after every message before it), however long a
        // slow reader takes; a dead peer fails the marker and releases it at once.
        marker.whenComplete((v, e) -> release(e == null));
        try {
            await(marker, options.closeTimeout().toNanos());
        } catch (TimeoutException e) {
            LOG.debug(
                    "{}: close marker still queued after {}; it goes when the peer reads",
                    this,
                    options.closeTimeout());
        } catch (RuntimeException e) {
            LOG.debug("{}: close marker failed: {}", this, e.toString());
        }
    }

    @Override
    public void abort() {
        synchronized (this) {
            if (state == State.CLOSED) {
                return;
            }
            state = State.CLOSED;
        }
        CommClosedException cause =
                new CommClosedException("comm " + local + " <-> " + peer + " was aborted on this side");
        markClosed(cause);
        endReads(cause);
        release(false);
    }

    /** After a local close: pending reads fail, messages received ahead are freed. */
    private void endReads(CommClosedException cause) {
        List<CompletableFuture<Message>> failed;
        List<Message> dropped;
        lock.lock();
        try {
            if (readEnd == null) {
                readEnd = cause;
            }
            failed = new ArrayList<>(readers);
            readers.clear();
            dropped = new ArrayList<>(inbox);
            inbox.clear();
        } finally {
            lock.unlock();
        }
        failed.forEach(r -> r.completeExceptionally(cause));
        dropped.forEach(Message::close);
    }

    @Override
    public boolean isClosed() {
        return state != State.OPEN;
    }

    /** The error for an operation on a closed comm, naming why it closed. */
    protected final CommClosedException closedError(String what) {
        CommException why = closedBecause;
        return new CommClosedException(
                "cannot " + what + " comm " + local + " <-> " + peer + ": "
                        + (why != null ? why.getMessage() : "it is closing"),
                why);
    }

    @Override
    public URI localAddress() {
        return local;
    }

    @Override
    public URI peerAddress() {
        return peer;
    }

    @Override
    public String peerIdentity() {
        return peerIdentity;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + local + " <-> " + peer + (isClosed() ? ", closed" : "") + "]";
    }
}
