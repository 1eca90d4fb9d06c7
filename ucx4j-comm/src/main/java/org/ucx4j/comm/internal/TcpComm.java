package org.ucx4j.comm.internal;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import org.ucx4j.HostBufferPool;
import org.ucx4j.MemoryKind;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;

/**
 * A comm over one TCP connection (NIO, blocking mode, TCP_NODELAY). Writes: header and frame table in
 * one direct buffer, then the frames in place, in one gathering write; the first writer to find the
 * queue idle writes (on its own thread when it blocks on the result anyway, else on a virtual thread)
 * and takes the messages others queued meanwhile, so concurrent writers never interleave bytes. Reads:
 * one reader per comm, a virtual thread, which reads a message only when one is wanted, small parts
 * through a 64 KiB buffer and large frames straight into their memory.
 *
 * <p>Why a virtual thread: an idle comm's reader waits (for a reader, or in a socket read), and a
 * virtual thread waiting there holds no platform thread (the JDK parks it and polls the socket), so a
 * process with thousands of idle tcp:// comms does not hold thousands of threads. Before, each comm had
 * a platform reader thread (and its 1 MiB stack reservation).
 *
 * <p>Bounds: a message's bytes are taken from the comm's and, for accepted comms, the listener's
 * {@link InFlightBudget} before its memory is allocated, and given back once it is complete; and the
 * comm context's budget of unclosed messages ({@link MessageScopes#admit}) gates the next read.
 */
final class TcpComm extends AbstractComm {
    private static final int READ_BUFFER = 64 * 1024;
    /** Heap frames go out in slices this big (the JDK copies heap buffers into a temporary direct one). */
    private static final long HEAP_SLICE = 1 << 20;
    /** Native frames go out in slices this big (ByteBuffers stop at 2 GiB). */
    private static final long NATIVE_SLICE = 1L << 30;
    /**
     * A received device frame is staged through host memory this much at a time: each chunk is copied to
     * the device while the socket fills the next (two chunks of host memory, used in turn).
     */
    static final long STAGING_CHUNK = 8L << 20;
    /** Runs the staging copies of received device frames, one virtual thread each. */
    private static final Executor STAGING_COPIES =
            r -> Thread.ofVirtual().name("ucx4j-tcp-staging").start(r);

    private final SocketChannel channel;
    /**
     * The read buffer, the reader thread's alone: native memory of an arena the reader closes when it
     * ends, so a closed comm gives its 64 KiB back at once (a direct ByteBuffer waits for a collection,
     * which an idle heap may never have: 1,000 closed comms held 64 MiB).
     */
    private ByteBuffer in;

    private final Semaphore wanted = new Semaphore(0);
    private final Object writeLock = new Object();
    private final ArrayDeque<PendingWrite> writes = new ArrayDeque<>();
    private boolean writing;
    private volatile boolean released;
    /** The arenas received messages live in: the transport's (its comm context's). */
    private final MessageScopes scopes;
    /** Bytes this comm is receiving at once ({@code max-in-flight}). */
    private final InFlightBudget inFlight;
    /** The accepting listener's budget ({@code max-in-flight-per-listener}), or null. */
    private final InFlightBudget listenerInFlight;

    private record PendingWrite(ByteBuffer[] buffers, CompletableFuture<Void> done) {}

    TcpComm(
            SocketChannel channel,
            MessageScopes scopes,
            CommOptions options,
            URI local,
            URI peer,
            String peerIdentity,
            InFlightBudget listenerInFlight) {
        super(options, local, peer, peerIdentity);
        this.channel = channel;
        this.scopes = scopes;
        this.inFlight = new InFlightBudget(options.maxInFlight());
        this.listenerInFlight = listenerInFlight;
        Thread.ofVirtual().name("ucx4j-tcp-reader " + peer).start(this::readLoop);
        start();
    }

    // ------------------------------------------------------------------ reading

    @Override
    protected MessageScopes scopes() {
        return scopes;
    }

    @Override
    protected void receiveOne() {
        wanted.release();
    }

    private void readLoop() {
        try (Arena buffer = Arena.ofConfined()) {
            in = buffer.allocate(READ_BUFFER, 64).asByteBuffer().flip();
            readMessages();
        }
    }

    private void readMessages() {
        try {
            while (true) {
                wanted.acquire();
                if (released) {
                    return;
                }
                Message m = readMessage();
                if (m == null) {
                    ended(
                            new CommClosedException(
                                    "comm " + localAddress() + " <-> " + peerAddress() + " was closed by the peer"),
                            true);
                    return;
                }
                received(m);
            }
        } catch (CommProtocolException e) {
            ended(e, false);
        } catch (InterruptedException | IOException e) {
            if (!released) {
                ended(
                        new CommClosedException(
                                "comm " + localAddress() + " <-> " + peerAddress() + " lost: " + Failures.describe(e),
                                e),
                        false);
            }
        } catch (RuntimeException | Error e) {
            ended(
                    new CommException("comm " + localAddress() + " <-> " + peerAddress() + " failed reading: " + e, e),
                    false);
        }
    }

    /** Reads one message; null for the peer's close marker. */
    private Message readMessage() throws IOException, InterruptedException {
        MemorySegment head = MemorySegment.ofBuffer(fill(WireFormat.HEADER_BYTES));
        WireFormat.Header h = WireFormat.readHeader(head, 0, options.maxFrames());
        in.position(in.position() + WireFormat.HEADER_BYTES);
        if (h.isClose()) {
            return null;
        }
        if (h.flags() != 0) {
            throw new CommProtocolException("tcp:// message with ucx-only flags " + h.flags());
        }
        WireFormat.Table t;
        long tableBytes = h.tableBytes();
        if (tableBytes <= READ_BUFFER) {
            t = WireFormat.readTable(
                    MemorySegment.ofBuffer(fill((int) tableBytes)),
                    0,
                    h.frameCount(),
                    options.maxFrameSize(),
                    options.maxMessageSize());
            in.position(in.position() + (int) tableBytes);
        } else {
            // Bounded by max-frames (checked above): 16 bytes per frame.
            MemorySegment table = MemorySegment.ofArray(new byte[(int) tableBytes]);
            readFully(table);
            t = WireFormat.readTable(table, 0, h.frameCount(), options.maxFrameSize(), options.maxMessageSize());
        }
        long total = t.total();
        if (!inFlight.take(total, () -> !released)) {
            throw new ClosedChannelException();
        }
        try {
            if (listenerInFlight != null && !listenerInFlight.take(total, () -> !released)) {
                throw new ClosedChannelException();
            }
            try {
                return readFrames(h, t);
            } finally {
                if (listenerInFlight != null) {
                    listenerInFlight.release(total);
                }
            }
        } finally {
            inFlight.release(total);
        }
    }

    /** Reads a message's frames into memory allocated for them. */
    private Message readFrames(WireFormat.Header h, WireFormat.Table t) throws IOException {
        Arena scope = scopes.forMessage(t.total(), h.frameCount());
        List<Frame> frames = new ArrayList<>(h.frameCount());
        try {
            for (int i = 0; i < h.frameCount(); i++) {
                MemoryKind kind = t.kinds()[i];
                MemorySegment seg = options.allocator().allocate(kind, t.sizes()[i], scope);
                if (kind == MemoryKind.HOST) {
                    readFully(seg);
                } else {
                    readDeviceFrame(kind, seg);
                }
                frames.add(new Frame(seg, kind));
            }
        } catch (IOException | RuntimeException e) {
            scope.close();
            throw e;
        }
        return Message.received(frames, scope);
    }

    /**
     * Reads a frame of device memory: the socket fills warm host memory {@link #STAGING_CHUNK} at a time,
     * and the allocator copies each chunk over on another thread while the next one is read, so that the
     * copies hide behind the socket (before, a 64 MiB frame was read whole, then copied whole: over
     * loopback TCP on the H100 machine that made device frames 0.63x as fast as host frames).
     */
    private void readDeviceFrame(MemoryKind kind, MemorySegment dst) throws IOException {
        long size = dst.byteSize();
        if (size == 0) {
            return;
        }
        long chunk = Math.min(size, STAGING_CHUNK);
        CompletableFuture<?>[] copying = new CompletableFuture<?>[2];
        Arena staging = Arena.ofShared();
        try {
            MemorySegment[] host = {
                HostBufferPool.shared().allocate(chunk, staging),
                size > chunk ? HostBufferPool.shared().allocate(chunk, staging) : null
            };
            int k = 0;
            for (long off = 0; off < size; off += chunk, k ^= 1) {
                long n = Math.min(chunk, size - off);
                awaitCopy(copying[k]); // this buffer's previous chunk is on the device
                MemorySegment part = host[k].asSlice(0, n);
                readFully(part);
                MemorySegment to = dst.asSlice(off, n);
                copying[k] =
                        CompletableFuture.runAsync(() -> options.allocator().copy(kind, to, part), STAGING_COPIES);
            }
            awaitCopy(copying[0]);
            awaitCopy(copying[1]);
        } finally {
            // A copy may still run when reading failed: the staging memory goes back only after it.
            CompletableFuture.allOf(Arrays.stream(copying)
                            .map(c -> c == null ? CompletableFuture.completedFuture(null) : c)
                            .toArray(CompletableFuture[]::new))
                    .handle((v, e) -> null)
                    .join();
            staging.close();
        }
    }

    /** Waits for a staging copy; its failure is thrown as it was (an unchecked exception). */
    private static void awaitCopy(CompletableFuture<?> copy) {
        if (copy == null) {
            return;
        }
        try {
            copy.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }

    /** Makes at least {@code n} bytes available in {@code in} and returns a view of them (not consumed). */
    private ByteBuffer fill(int n) throws IOException {
        if (in.remaining() < n) {
            in.compact();
            while (in.position() < n) {
                if (channel.read(in) < 0) {
                    in.flip();
                    throw new EOFException("connection closed by the peer without a close marker");
                }
            }
            in.flip();
        }
        return in.slice(in.position(), n);
    }

    private void readFully(MemorySegment dst) throws IOException {
        long done = 0;
        long size = dst.byteSize();
        int buffered = (int) Math.min(in.remaining(), size);
        if (buffered > 0) {
            MemorySegment.copy(MemorySegment.ofBuffer(in), 0, dst, 0, buffered);
            in.position(in.position() + buffered);
            done = buffered;
        }
        while (done < size) {
            long left = size - done;
            if (left < READ_BUFFER / 2) {
                int n = (int) left;
                ByteBuffer b = fill(n);
                MemorySegment.copy(MemorySegment.ofBuffer(b), 0, dst, done, n);
                in.position(in.position() + n);
                done += n;
            } else {
                ByteBuffer b = dst.asSlice(done, Math.min(left, NATIVE_SLICE)).asByteBuffer();
                while (b.hasRemaining()) {
                    if (channel.read(b) < 0) {
                        throw new EOFException("connection closed by the peer in the middle of a frame");
                    }
                }
                done += b.capacity();
            }
        }
    }

    // ------------------------------------------------------------------ writing

    @Override
    protected CompletableFuture<Void> send(Message message, boolean callerWaits) {
        List<Frame> frames = message.frames();
        ByteBuffer head = ByteBuffer.allocateDirect(WireFormat.HEADER_BYTES + frames.size() * WireFormat.ENTRY_BYTES);
        MemorySegment hs = MemorySegment.ofBuffer(head);
        WireFormat.writeHeader(hs, 0, WireFormat.TYPE_MESSAGE, 0, frames.size());
        WireFormat.writeTable(hs, WireFormat.HEADER_BYTES, frames);
        List<ByteBuffer> buffers = new ArrayList<>(frames.size() + 1);
        buffers.add(head);
        Arena staging = null;
        try {
            for (int i = 0; i < frames.size(); i++) {
                Frame f = frames.get(i);
                MemorySegment s = f.segment();
                if (f.kind() != MemoryKind.HOST) {
                    // Device frames go out through warm host memory, returned to the pool once the send is done.
                    if (staging == null) {
                        staging = Arena.ofShared();
                    }
                    MemorySegment host = HostBufferPool.shared().allocate(f.size(), staging);
                    options.allocator().copy(f.kind(), host, s);
                    s = host;
                }
                long slice = s.isNative() ? NATIVE_SLICE : HEAP_SLICE;
                for (long off = 0; off < s.byteSize(); off += slice) {
                    buffers.add(
                            s.asSlice(off, Math.min(slice, s.byteSize() - off)).asByteBuffer());
                }
            }
        } catch (RuntimeException e) {
            if (staging != null) {
                staging.close(); // a frame that could not be copied out: give the staged buffers back
            }
            throw e;
        }
        if (staging == null) {
            return enqueue(buffers.toArray(ByteBuffer[]::new), callerWaits);
        }
        Arena stagingArena = staging;
        CompletableFuture<Void> sent;
        try {
            sent = enqueue(buffers.toArray(ByteBuffer[]::new), callerWaits);
        } catch (RuntimeException e) {
            stagingArena.close();
            throw e;
        }
        return sent.whenComplete((v, e) -> stagingArena.close());
    }

    @Override
    protected CompletableFuture<Void> sendClose() {
        ByteBuffer head = ByteBuffer.allocateDirect(WireFormat.HEADER_BYTES);
        WireFormat.writeHeader(MemorySegment.ofBuffer(head), 0, WireFormat.TYPE_CLOSE, 0, 0);
        return enqueue(new ByteBuffer[] {head}, true);
    }

    private CompletableFuture<Void> enqueue(ByteBuffer[] buffers, boolean callerWaits) {
        PendingWrite w = new PendingWrite(buffers, new CompletableFuture<>());
        boolean becomeWriter;
        synchronized (writeLock) {
            if (released) {
                w.done.completeExceptionally(closedError("write to"));
                return w.done;
            }
            writes.add(w);
            becomeWriter = !writing;
            writing = true;
        }
        if (becomeWriter) {
            if (callerWaits) {
                drainWrites();
            } else {
                Thread.ofVirtual().name("ucx4j-tcp-writer").start(this::drainWrites);
            }
        }
        return w.done;
    }

    private void drainWrites() {
        while (true) {
            PendingWrite w;
            synchronized (writeLock) {
                w = writes.poll();
                if (w == null) {
                    writing = false;
                    return;
                }
            }
            try {
                ByteBuffer[] b = w.buffers;
                long left = 0;
                for (ByteBuffer x : b) {
                    left += x.remaining();
                }
                int first = 0;
                while (left > 0) {
                    left -= channel.write(b, first, b.length - first);
                    while (first < b.length && !b[first].hasRemaining()) {
                        first++;
                    }
                }
                w.done.complete(null);
            } catch (IOException | RuntimeException e) {
                // Closed meanwhile (the peer's close marker, or ours): say why, not how the socket ended.
                CommClosedException lost = isClosed()
                        ? closedError("write to")
                        : new CommClosedException(
                                "comm " + localAddress() + " <-> " + peerAddress() + " lost while writing: "
                                        + Failures.describe(e),
                                e);
                w.done.completeExceptionally(lost);
                List<PendingWrite> rest;
                synchronized (writeLock) {
                    rest = new ArrayList<>(writes);
                    writes.clear();
                    writing = false;
                }
                rest.forEach(r -> r.done.completeExceptionally(lost));
                failed(lost);
                return;
            }
        }
    }

    // ------------------------------------------------------------------ release

    @Override
    protected void release(boolean graceful) {
        List<PendingWrite> rest;
        synchronized (writeLock) {
            if (released) {
                return;
            }
            released = true;
            rest = new ArrayList<>(writes);
            writes.clear();
        }
        CommClosedException e = closedError("write to");
        rest.forEach(r -> r.done.completeExceptionally(e));
        try {
            if (graceful && channel.isOpen()) {
                channel.shutdownOutput();
            }
        } catch (IOException ignored) {
            // closing anyway
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing left to do
        }
        wanted.release();
    }
}
