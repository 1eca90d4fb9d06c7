package org.ucx4j.spark;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.apache.spark.network.buffer.FileSegmentManagedBuffer;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockBatchId;
import org.apache.spark.storage.ShuffleBlockId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommTimeoutException;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;
import org.ucx4j.comm.internal.RefusalLog;
import scala.Option;

/**
 * Serves this executor's shuffle blocks to other executors over a ucx4j comm listener.
 *
 * <p>Each request names blocks; each is resolved through Spark's own {@link ShuffleBlockResolver} (the
 * index file gives the data file's range). The reply's size is known from the index alone; the server then
 * waits for its share of {@code spark.ucx4j.shuffle.server.maxBytesInFlight} (the bytes being sent at once,
 * all peers together; a reply larger than the bound waits until nothing else is in flight, then goes
 * alone), and only then reads the blocks: a range of at least {@link #MAP_AT_LEAST} bytes is mapped and
 * sent as it is (no copy in the JVM; over {@code ucx://} UCX reads the mapped pages, over {@code tcp://}
 * they go from the page cache to the socket), a smaller one is copied into the heap. A block that cannot
 * be served (unknown, deleted, not a shuffle block, a range the index gives as negative, an id asked for
 * twice in one request) gets an error entry with a short reason that the client turns into a fetch
 * failure; nothing is dropped silently. The details (paths on this host) go to this executor's log: the
 * first refusal of a request at WARN, at most one such line a second, every refusal at DEBUG.
 *
 * <p>Bounds a hostile client cannot lift: a request frame larger than {@link
 * BlockFetchProtocol#MAX_REQUEST_BYTES} closes its connection without being copied into the heap or decoded
 * (the transport has received it, within {@code max-message-size}); a reply copies at most {@code maxBytesInFlight} bytes into the heap
 * (beyond that, in the one reply larger than the bound, small blocks are mapped too) and maps at most
 * {@link #MAX_MAPS_PER_REPLY} ranges; a reply the peer does not take within {@code
 * spark.ucx4j.shuffle.timeout} aborts its connection, which gives its share of {@code maxBytesInFlight}
 * back, and a request that finds no room within that time aborts its own.
 *
 * <p>Connections: one peer (its host and the identity it announced in the handshake; with
 * {@code spark.authenticate} only holders of Spark's secret get this far) holds at most
 * {@code spark.ucx4j.shuffle.maxConnectionsPerPeer} at once. A connection beyond that closes the peer's
 * longest-idle one (of those not serving, the one whose last request came first; a client whose kept
 * connection was closed reconnects at once) or, when all of them are serving, is refused. A connection that
 * sends no request for twice {@code spark.ucx4j.shuffle.idleTimeout} is closed (clients close theirs after
 * the timeout itself, so this only reaps abandoned ones).
 *
 * <p>Threading: each accepted comm is served on its own virtual thread, one request at a time (a reply may
 * still be being written when the next request is read).
 * Ownership: the shuffle manager owns it and closes it at stop; closing stops accepting and aborts the
 * comms being served.
 */
final class ShuffleBlockServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ShuffleBlockServer.class);

    /**
     * Blocks of at least this many bytes are mapped, smaller ones copied. Maps are taken only under
     * permits, so at most {@code maxBytesInFlight / MAP_AT_LEAST} are live at once (plus those of the one
     * reply larger than the bound that goes alone), far below Linux's {@code vm.max_map_count}.
     */
    static final long MAP_AT_LEAST = 1 << 20;

    /**
     * The most ranges one reply maps. Only the one reply larger than {@code maxBytesInFlight} (which goes
     * alone) can come near it, so the process stays far below Linux's {@code vm.max_map_count} (65,530).
     */
    static final int MAX_MAPS_PER_REPLY = 16_384;

    /** Where replies' completions run: never the transport's progress thread. */
    private static final Executor REPLY_DONE =
            task -> Thread.ofVirtual().name("ucx4j-shuffle-reply-done").start(task);

    private final ShuffleBlockResolver resolver;
    private final long maxMessageSize;
    private final CommListener listener;
    private final Semaphore bytesInFlight;
    private final int permitsTotal;
    private final long bytesPerPermit;
    private final AtomicLong bytesServed = new AtomicLong();
    private final int maxPerPeer;
    private final Duration idleClose;
    /** How long a reply may take to be written, and a request to find room ({@code spark.ucx4j.shuffle.timeout}). */
    private final Duration replyTimeout;
    /**
     * Where what a peer did wrong is logged (refused connections and blocks, bad requests, replies not
     * taken): a few lines per window, then counts, so that a peer cannot flood the executor's log.
     */
    private final RefusalLog refusals;
    /** Open connections by peer; guarded by itself. */
    private final Map<String, List<Served>> byPeer = new HashMap<>();

    private volatile boolean closed;

    ShuffleBlockServer(
            CommContext context, String host, ShuffleTransportSettings settings, ShuffleBlockResolver resolver) {
        this(context, host, settings, resolver, LOG::warn);
    }

    /** For tests: what peers do wrong goes to {@code warnings} (rate-limited) instead of the log. */
    ShuffleBlockServer(
            CommContext context,
            String host,
            ShuffleTransportSettings settings,
            ShuffleBlockResolver resolver,
            java.util.function.Consumer<String> warnings) {
        this.refusals = new RefusalLog(warnings, "ucx4j shuffle");
        this.resolver = resolver;
        this.maxMessageSize = settings.options().maxMessageSize();
        // Permits of 4 KiB keep the count within an int for any bound up to 8 TiB.
        this.bytesPerPermit = 4096;
        this.permitsTotal = (int) Math.max(1, Math.min(Integer.MAX_VALUE, settings.serverMaxBytesInFlight() / 4096));
        this.bytesInFlight = new Semaphore(permitsTotal, true);
        this.maxPerPeer = settings.maxConnectionsPerPeer();
        this.idleClose = settings.idleTimeout().multipliedBy(2);
        this.replyTimeout = settings.fetchTimeout();
        URI address = URI.create(settings.scheme() + "://" + hostForUri(host) + ":0");
        this.listener = context.listen(address, this::serve, settings.options());
    }

    private static String hostForUri(String host) {
        return host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
    }

    /**
     * Where peers connect.
     *
     * @return the listener's address
     */
    URI address() {
        return listener.address();
    }

    /**
     * Bytes of blocks sent so far.
     *
     * @return the count
     */
    long bytesServed() {
        return bytesServed.get();
    }

    /**
     * A connection being served: busy from reading a request until its reply is written (a client may send
     * its next request before the last reply's write completed, so the requests in flight are counted). Its last request's
     * arrival (not its reply's completion, which runs on another thread and may be late) orders it for
     * eviction, so the connection a client used longest ago goes first whatever the completions' order.
     */
    private static final class Served {
        final Comm comm;
        /** Requests read whose replies are not written yet. */
        final AtomicInteger inFlight = new AtomicInteger();

        volatile long lastRequest = System.nanoTime();

        Served(Comm comm) {
            this.comm = comm;
        }
    }

    /** The key connections are counted under: the peer's host and announced identity. */
    private static String peerOf(Comm comm) {
        return comm.peerAddress().getHost() + " " + comm.peerIdentity();
    }

    /**
     * Counts a new connection against its peer's cap: makes room by closing the peer's longest-idle
     * connection when the peer is at the cap; refuses it when every one of them is serving.
     *
     * @return the connection's entry, or null when refused
     */
    private Served admit(Comm comm, String peer) {
        Served evicted = null;
        Served admitted;
        synchronized (byPeer) {
            if (closed) {
                return null;
            }
            List<Served> open = byPeer.computeIfAbsent(peer, p -> new ArrayList<>());
            if (open.size() >= maxPerPeer) {
                for (Served c : open) {
                    if (c.inFlight.get() == 0 && (evicted == null || c.lastRequest - evicted.lastRequest < 0)) {
                        evicted = c;
                    }
                }
                if (evicted == null) {
                    return null;
                }
                open.remove(evicted);
            }
            admitted = new Served(comm);
            open.add(admitted);
        }
        if (evicted != null) {
            LOG.debug("ucx4j shuffle: {} is at {} connections: closing its longest idle one", peer, maxPerPeer);
            evicted.comm.close();
        }
        return admitted;
    }

    private void serve(Comm comm) {
        String peer = peerOf(comm);
        Served served = admit(comm, peer);
        if (served == null) {
            if (!closed) {
                refusals.refused(
                        "connection over the per-peer cap",
                        "refused a connection from {}: its {} connections are all serving ({})",
                        comm.peerAddress(),
                        maxPerPeer,
                        ShuffleTransportSettings.MAX_CONNECTIONS_PER_PEER);
            }
            comm.abort();
            return;
        }
        try (comm) {
            while (!closed) {
                byte[] request;
                try (Message m = comm.read(idleClose)) {
                    served.inFlight.incrementAndGet();
                    served.lastRequest = System.nanoTime();
                    if (m.frameCount() != 1) {
                        refusals.refused(
                                "malformed request",
                                "a request from {} has {} frames, not 1: closing",
                                comm.peerAddress(),
                                m.frameCount());
                        return;
                    }
                    if (m.byteSize() > BlockFetchProtocol.MAX_REQUEST_BYTES) {
                        refusals.refused(
                                "oversized request",
                                "a request from {} has {} bytes, more than a request may ({}): closing",
                                comm.peerAddress(),
                                m.byteSize(),
                                BlockFetchProtocol.MAX_REQUEST_BYTES);
                        return;
                    }
                    request = m.frame(0).toByteArray();
                }
                serveRequest(comm, served, BlockFetchProtocol.decodeRequest(request));
            }
        } catch (CommTimeoutException e) {
            LOG.debug("ucx4j shuffle: closing {}, idle for {}", comm.peerAddress(), idleClose);
        } catch (CommClosedException e) {
            // The peer closed or died (or we closed it to make room): nothing to answer.
        } catch (RuntimeException e) {
            if (!closed) {
                refusals.refused(
                        "serving failed", "serving {} failed: {}", comm.peerAddress(), printable(e.toString()));
            }
            comm.abort();
        } finally {
            synchronized (byPeer) {
                List<Served> open = byPeer.get(peer);
                if (open != null && open.remove(served) && open.isEmpty()) {
                    byPeer.remove(peer);
                }
            }
        }
    }

    /**
     * Connections open now from peers with the given identity (for tests).
     *
     * @param identity a peer's announced identity
     * @return the count, all its hosts together
     */
    int connectionsOf(String identity) {
        return countOf(identity, c -> true);
    }

    /**
     * Connections open now from peers with the given identity that are not serving a request (for tests:
     * a reply's completion, which makes its connection idle, runs after the peer may have read it).
     *
     * @param identity a peer's announced identity
     * @return the count, all its hosts together
     */
    int idleConnectionsOf(String identity) {
        return countOf(identity, c -> c.inFlight.get() == 0);
    }

    private int countOf(String identity, Predicate<Served> which) {
        synchronized (byPeer) {
            return (int) byPeer.entrySet().stream()
                    .filter(e -> e.getKey().endsWith(" " + identity))
                    .flatMap(e -> e.getValue().stream())
                    .filter(which)
                    .count();
        }
    }

    private void serveRequest(Comm comm, Served served, List<String> ids) {
        // Sizes come from the index first; memory is taken (permits, then copies and maps) only for a reply
        // that will go, so requests waiting for permits hold nothing but their list.
        List<BlockFetchProtocol.Entry> entries = new ArrayList<>(ids.size());
        List<FileSegmentManagedBuffer> blocks = new ArrayList<>(ids.size());
        Refusals refused = new Refusals();
        Set<String> asked = new HashSet<>();
        long total = 0;
        for (String id : ids) {
            try {
                if (!asked.add(id)) {
                    throw new BadRequestException("asked for twice in one request");
                }
                FileSegmentManagedBuffer block = resolve(id);
                if (block.getOffset() < 0 || block.getLength() < 0) {
                    // Spark's resolver gives a batch id whose start is after its end a negative length.
                    throw new BadRequestException("the index gives it a negative range");
                }
                // A corrupt index could still overflow the sum: that block is refused (ArithmeticException).
                total = Math.addExact(total, block.getLength());
                entries.add(new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, block.getLength(), null));
                blocks.add(block);
            } catch (Exception e) {
                // Exception, not only RuntimeException: Spark's BlockId.apply throws UnrecognizedBlockId, a
                // SparkException (checked, undeclared from Scala), for an id it cannot parse.
                entries.add(refused.add(id, e));
                blocks.add(null);
            }
        }
        if (refuseIfTooLarge(entries, total)) {
            blocks.replaceAll(b -> null);
            total = 0;
        }
        int permits = (int) Math.min(permitsTotal, Math.max(1, (total + bytesPerPermit - 1) / bytesPerPermit));
        if (!acquire(permits)) {
            served.inFlight.decrementAndGet();
            logRefusals(comm, refused);
            throw new IllegalStateException("no room to send a reply of " + total + " bytes within " + replyTimeout
                    + ": the replies in flight hold all of " + ShuffleTransportSettings.SERVER_MAX_BYTES_IN_FLIGHT);
        }
        List<Frame> frames = new ArrayList<>(ids.size() + 1);
        frames.add(null);
        Arena maps = null;
        int mapped = 0;
        // Heap copies stay within the bound on bytes in flight even in the one reply larger than it (which
        // goes alone): past it, small blocks are mapped as well.
        long copyBudget = (long) permitsTotal * bytesPerPermit;
        boolean sent = false;
        try {
            for (int i = 0; i < blocks.size(); i++) {
                FileSegmentManagedBuffer block = blocks.get(i);
                if (block == null) {
                    continue;
                }
                try {
                    if (block.getLength() >= MAP_AT_LEAST || block.getLength() > copyBudget) {
                        if (mapped == MAX_MAPS_PER_REPLY) {
                            throw new BadRequestException(
                                    "more than " + MAX_MAPS_PER_REPLY + " blocks to map in one reply");
                        }
                        if (maps == null) {
                            maps = Arena.ofShared();
                        }
                        frames.add(Frame.host(map(block, maps)));
                        mapped++;
                    } else {
                        frames.add(Frame.of(copy(block)));
                        copyBudget -= block.getLength();
                    }
                } catch (IOException | RuntimeException e) {
                    entries.set(i, refused.add(ids.get(i), e));
                    total -= block.getLength();
                }
            }
            if (refuseIfTooLarge(entries, total)) {
                frames.subList(1, frames.size()).clear();
                total = 0;
            }
            logRefusals(comm, refused);
            frames.set(0, Frame.of(BlockFetchProtocol.encodeReply(entries)));
            int held = permits;
            long bytes = total;
            Arena toClose = maps;
            // Completion runs off the transport's progress thread: closing a shared arena is a handshake
            // with every thread, which that thread must not wait for.
            CompletableFuture<Void> write = comm.writeAsync(Message.of(frames));
            write.whenCompleteAsync(
                    (ok, failure) -> {
                        bytesInFlight.release(held);
                        served.inFlight.decrementAndGet();
                        if (toClose != null) {
                            toClose.close();
                        }
                        if (failure == null) {
                            bytesServed.addAndGet(bytes);
                        } else {
                            // The peer waits for this reply: drop the connection so its fetch fails now.
                            if (!closed) {
                                refusals.refused(
                                        "reply failed",
                                        "a reply to {} failed: {}",
                                        comm.peerAddress(),
                                        failure.toString());
                            }
                            comm.abort();
                        }
                    },
                    REPLY_DONE);
            // A peer that stops taking its reply would keep these permits (and the maps) for as long as its
            // connection lives, while every other peer's requests wait for permits. Past the timeout the
            // connection is aborted: that fails the write once the transport let go of its frames, and the
            // completion above gives everything back.
            write.copy().orTimeout(replyTimeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((ok, failure) -> {
                if (failure instanceof TimeoutException && !write.isDone()) {
                    refusals.refused(
                            "reply not taken",
                            "{} did not take a reply of {} bytes within {}: aborting the connection",
                            comm.peerAddress(),
                            bytes,
                            replyTimeout);
                    comm.abort();
                }
            });
            sent = true;
        } finally {
            if (!sent) {
                served.inFlight.decrementAndGet();
                bytesInFlight.release(permits);
                if (maps != null) {
                    maps.close();
                }
            }
        }
    }

    /** Takes {@code permits} of the bytes in flight, waiting at most the reply timeout. */
    private boolean acquire(int permits) {
        try {
            return bytesInFlight.tryAcquire(permits, replyTimeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The blocks of one request that could not be served, for one log line. */
    private static final class Refusals {
        int count;
        String firstId;
        Exception firstCause;

        /** Counts a refused block; returns its error entry, with a short reason for the client. */
        BlockFetchProtocol.Entry add(String id, Exception e) {
            LOG.debug("ucx4j shuffle: refused block {}: {}", printable(id), printable(e.toString()));
            if (count++ == 0) {
                firstId = id;
                firstCause = e;
            }
            String reason = e instanceof NotAShuffleBlockException
                    ? "not a shuffle block"
                    : e instanceof BadRequestException
                            ? e.getMessage()
                            : "could not be read on the serving executor (its log says why)";
            return new BlockFetchProtocol.Entry(BlockFetchProtocol.ERROR, 0, "block " + printable(id) + ": " + reason);
        }
    }

    /**
     * One refusal for a request's refused blocks (how many, the first with its cause), through the
     * server's {@link RefusalLog}: a peer that asks for thousands of bad ids must not fill the disk.
     */
    private void logRefusals(Comm comm, Refusals refused) {
        if (refused.count == 0) {
            return;
        }
        refusals.refused(
                "blocks refused",
                "{} block(s) asked for by {} refused; the first, {}: {}",
                refused.count,
                comm.peerAddress(),
                printable(refused.firstId),
                printable(refused.firstCause.toString()));
    }

    /** A peer's text for a log line or a reply: control characters escaped, at most 120 characters kept. */
    static String printable(String text) {
        StringBuilder out = new StringBuilder(Math.min(text.length(), 128) + 3);
        int i = 0;
        for (; i < text.length() && out.length() < 120; i++) {
            char c = text.charAt(i);
            if (Character.isISOControl(c)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        if (i < text.length()) {
            out.append("...");
        }
        return out.toString();
    }

    /**
     * Replaces every entry by an error when the reply (its blocks and its header frame) would exceed
     * max-message-size, which the comm would refuse whole.
     */
    private boolean refuseIfTooLarge(List<BlockFetchProtocol.Entry> entries, long total) {
        if (total + BlockFetchProtocol.encodeReply(entries).length <= maxMessageSize) {
            return false;
        }
        String why = "the reply would carry " + total + " bytes, more than max-message-size (" + maxMessageSize
                + "): raise spark.ucx4j.max-message-size on every executor";
        entries.replaceAll(e -> new BlockFetchProtocol.Entry(BlockFetchProtocol.ERROR, 0, why));
        return true;
    }

    private FileSegmentManagedBuffer resolve(String id) {
        BlockId blockId = BlockId.apply(id);
        if (!(blockId instanceof ShuffleBlockId) && !(blockId instanceof ShuffleBlockBatchId)) {
            throw new NotAShuffleBlockException();
        }
        ManagedBuffer data = resolver.getBlockData(blockId, Option.empty());
        if (!(data instanceof FileSegmentManagedBuffer segment)) {
            throw new IllegalStateException(
                    "the resolver gave a " + data.getClass().getName() + ", not a file range");
        }
        return segment;
    }

    private static FileChannel open(FileSegmentManagedBuffer block) throws IOException {
        File file = block.getFile();
        FileChannel channel = FileChannel.open(file.toPath(), StandardOpenOption.READ);
        if (block.getOffset() + block.getLength() > channel.size()) {
            long size = channel.size();
            channel.close();
            throw new IOException("the index says " + block.getLength() + " bytes at " + block.getOffset() + " but "
                    + file + " holds " + size);
        }
        return channel;
    }

    /** A small block, read into the heap (a mapping each would exhaust the process's map count). */
    private static byte[] copy(FileSegmentManagedBuffer block) throws IOException {
        byte[] bytes = new byte[Math.toIntExact(block.getLength())];
        if (bytes.length == 0) {
            return bytes;
        }
        try (FileChannel channel = open(block)) {
            ByteBuffer into = ByteBuffer.wrap(bytes);
            while (into.hasRemaining()) {
                if (channel.read(into, block.getOffset() + into.position()) < 0) {
                    throw new IOException(block.getFile() + " ended early");
                }
            }
        }
        return bytes;
    }

    /** A large block, mapped: sent from the page cache without a copy in the JVM. */
    private static MemorySegment map(FileSegmentManagedBuffer block, Arena arena) throws IOException {
        try (FileChannel channel = open(block)) {
            return channel.map(FileChannel.MapMode.READ_ONLY, block.getOffset(), block.getLength(), arena);
        }
    }

    /** A request asked for something no honest fetcher asks for; the message is the reason the client gets. */
    private static final class BadRequestException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        BadRequestException(String reason) {
            super(reason);
        }
    }

    /** A request named a block id that is not one of a shuffle's blocks. */
    private static final class NotAShuffleBlockException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        NotAShuffleBlockException() {
            super("not a shuffle block");
        }
    }

    @Override
    public void close() {
        List<Comm> open = new ArrayList<>();
        synchronized (byPeer) {
            closed = true;
            byPeer.values().forEach(list -> list.forEach(c -> open.add(c.comm)));
        }
        listener.close();
        open.forEach(Comm::abort);
    }
}
