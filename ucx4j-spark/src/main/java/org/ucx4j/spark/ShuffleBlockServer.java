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
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
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
 * be served (unknown, deleted, not a shuffle block) gets an error entry with a short reason (details stay
 * in this executor's log) that the client turns into a fetch failure; nothing is dropped silently.
 *
 * <p>Connections: one peer (its host and the identity it announced in the handshake; with
 * {@code spark.authenticate} only holders of Spark's secret get this far) holds at most
 * {@code spark.ucx4j.shuffle.maxConnectionsPerPeer} at once. A connection beyond that closes the peer's
 * longest-idle one (of those not serving, the one whose last request came first; a client whose kept
 * connection was closed reconnects at once) or, when all of them are serving, is refused. A connection that
 * sends no request for twice {@code spark.ucx4j.shuffle.idleTimeout} is closed (clients close theirs after
 * the timeout itself, so this only reaps abandoned ones).
 *
 * <p>Threading: each accepted comm is served on its own virtual thread, one request at a time.
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
    /** Open connections by peer; guarded by itself. */
    private final Map<String, List<Served>> byPeer = new HashMap<>();

    private volatile boolean closed;

    ShuffleBlockServer(
            CommContext context, String host, ShuffleTransportSettings settings, ShuffleBlockResolver resolver) {
        this.resolver = resolver;
        this.maxMessageSize = settings.options().maxMessageSize();
        // Permits of 4 KiB keep the count within an int for any bound up to 8 TiB.
        this.bytesPerPermit = 4096;
        this.permitsTotal = (int) Math.max(1, Math.min(Integer.MAX_VALUE, settings.serverMaxBytesInFlight() / 4096));
        this.bytesInFlight = new Semaphore(permitsTotal, true);
        this.maxPerPeer = settings.maxConnectionsPerPeer();
        this.idleClose = settings.idleTimeout().multipliedBy(2);
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
     * A connection being served: busy from reading a request until its reply is written. Its last request's
     * arrival (not its reply's completion, which runs on another thread and may be late) orders it for
     * eviction, so the connection a client used longest ago goes first whatever the completions' order.
     */
    private static final class Served {
        final Comm comm;
        volatile boolean busy;
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
                    if (!c.busy && (evicted == null || c.lastRequest - evicted.lastRequest < 0)) {
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
                LOG.warn(
                        "ucx4j shuffle: refused a connection from {}: its {} connections are all serving ({})",
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
                    served.busy = true;
                    served.lastRequest = System.nanoTime();
                    if (m.frameCount() != 1) {
                        LOG.warn(
                                "ucx4j shuffle: a request from {} has {} frames, not 1: closing",
                                comm.peerAddress(),
                                m.frameCount());
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
                LOG.warn("ucx4j shuffle: serving {} failed: {}", comm.peerAddress(), e.toString());
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
        return countOf(identity, c -> !c.busy);
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
        long total = 0;
        for (String id : ids) {
            try {
                FileSegmentManagedBuffer block = resolve(id);
                entries.add(new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, block.getLength(), null));
                blocks.add(block);
                total += block.getLength();
            } catch (Exception e) {
                // Exception, not only RuntimeException: Spark's BlockId.apply throws UnrecognizedBlockId, a
                // SparkException (checked, undeclared from Scala), for an id it cannot parse.
                entries.add(refusal(comm, id, e));
                blocks.add(null);
            }
        }
        if (refuseIfTooLarge(entries, total)) {
            blocks.replaceAll(b -> null);
            total = 0;
        }
        int permits = (int) Math.min(permitsTotal, Math.max(1, (total + bytesPerPermit - 1) / bytesPerPermit));
        bytesInFlight.acquireUninterruptibly(permits);
        List<Frame> frames = new ArrayList<>(ids.size() + 1);
        frames.add(null);
        Arena maps = null;
        boolean sent = false;
        try {
            for (int i = 0; i < blocks.size(); i++) {
                FileSegmentManagedBuffer block = blocks.get(i);
                if (block == null) {
                    continue;
                }
                try {
                    if (block.getLength() >= MAP_AT_LEAST) {
                        if (maps == null) {
                            maps = Arena.ofShared();
                        }
                        frames.add(Frame.host(map(block, maps)));
                    } else {
                        frames.add(Frame.of(copy(block)));
                    }
                } catch (IOException | RuntimeException e) {
                    entries.set(i, refusal(comm, ids.get(i), e));
                    total -= block.getLength();
                }
            }
            if (refuseIfTooLarge(entries, total)) {
                frames.subList(1, frames.size()).clear();
                total = 0;
            }
            frames.set(0, Frame.of(BlockFetchProtocol.encodeReply(entries)));
            int held = permits;
            long bytes = total;
            Arena toClose = maps;
            // Completion runs off the transport's progress thread: closing a shared arena is a handshake
            // with every thread, which that thread must not wait for.
            comm.writeAsync(Message.of(frames))
                    .whenCompleteAsync(
                            (ok, failure) -> {
                                bytesInFlight.release(held);
                                served.busy = false;
                                if (toClose != null) {
                                    toClose.close();
                                }
                                if (failure == null) {
                                    bytesServed.addAndGet(bytes);
                                } else {
                                    // The peer waits for this reply: drop the connection so its fetch fails now.
                                    LOG.warn(
                                            "ucx4j shuffle: a reply to {} failed: {}",
                                            comm.peerAddress(),
                                            failure.toString());
                                    comm.abort();
                                }
                            },
                            REPLY_DONE);
            sent = true;
        } finally {
            if (!sent) {
                served.busy = false;
                bytesInFlight.release(permits);
                if (maps != null) {
                    maps.close();
                }
            }
        }
    }

    /** An error entry with a short reason for the client; the details (paths on this host) go to our log. */
    private static BlockFetchProtocol.Entry refusal(Comm comm, String id, Exception e) {
        String reason = e instanceof NotAShuffleBlockException
                ? "not a shuffle block"
                : "could not be read on the serving executor (see its log)";
        LOG.warn("ucx4j shuffle: block {} asked for by {}: {}", id, comm.peerAddress(), e.toString());
        return new BlockFetchProtocol.Entry(BlockFetchProtocol.ERROR, 0, "block " + id + ": " + reason);
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
