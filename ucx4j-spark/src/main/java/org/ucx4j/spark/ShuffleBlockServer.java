package org.ucx4j.spark;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
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
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;
import scala.Option;

/**
 * Serves this executor's shuffle blocks to other executors over a ucx4j comm listener.
 *
 * <p>Each request names blocks; each is resolved through Spark's own {@link ShuffleBlockResolver} (the
 * index file gives the data file's range) and that range of the data file is mapped and sent as a frame
 * as it is (zero-copy: no copy in the JVM; over {@code ucx://} UCX reads the mapped pages, over
 * {@code tcp://} they go from the page cache to the socket). A block that cannot be served (unknown,
 * deleted, not a shuffle block) gets an error entry that the client turns into a fetch failure; nothing is
 * dropped silently. The bytes being sent at once, all peers together, are bounded by
 * {@code spark.ucx4j.shuffle.server.maxBytesInFlight} (a reply larger than the bound waits until nothing
 * else is in flight, then goes alone).
 *
 * <p>Threading: each accepted comm is served on its own virtual thread, one request at a time.
 * Ownership: the shuffle manager owns it and closes it at stop; closing stops accepting and aborts the
 * comms being served.
 */
final class ShuffleBlockServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ShuffleBlockServer.class);

    private final ShuffleBlockResolver resolver;
    private final long maxMessageSize;
    private final CommListener listener;
    private final Semaphore bytesInFlight;
    private final int permitsTotal;
    private final long bytesPerPermit;
    private final AtomicLong bytesServed = new AtomicLong();
    private final List<Comm> comms = new ArrayList<>();
    private volatile boolean closed;

    ShuffleBlockServer(
            CommContext context, String host, ShuffleTransportSettings settings, ShuffleBlockResolver resolver) {
        this.resolver = resolver;
        this.maxMessageSize = settings.options().maxMessageSize();
        // Permits of 4 KiB keep the count within an int for any bound up to 8 TiB.
        this.bytesPerPermit = 4096;
        this.permitsTotal = (int) Math.max(1, Math.min(Integer.MAX_VALUE, settings.serverMaxBytesInFlight() / 4096));
        this.bytesInFlight = new Semaphore(permitsTotal, true);
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

    private void serve(Comm comm) {
        synchronized (comms) {
            if (closed) {
                comm.abort();
                return;
            }
            comms.add(comm);
        }
        try (comm) {
            while (!closed) {
                byte[] request;
                try (Message m = comm.read()) {
                    if (m.frameCount() != 1) {
                        LOG.warn(
                                "ucx4j shuffle: a request from {} has {} frames, not 1: closing",
                                comm.peerAddress(),
                                m.frameCount());
                        return;
                    }
                    request = m.frame(0).toByteArray();
                }
                serveRequest(comm, BlockFetchProtocol.decodeRequest(request));
            }
        } catch (CommClosedException e) {
            // The peer closed or died: nothing to answer.
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.warn("ucx4j shuffle: serving {} failed: {}", comm.peerAddress(), e.toString());
            }
            comm.abort();
        } finally {
            synchronized (comms) {
                comms.remove(comm);
            }
        }
    }

    private void serveRequest(Comm comm, List<String> ids) {
        List<BlockFetchProtocol.Entry> entries = new ArrayList<>(ids.size());
        List<Frame> frames = new ArrayList<>(ids.size() + 1);
        frames.add(null);
        long total = 0;
        Arena arena = Arena.ofShared();
        boolean sent = false;
        int permits = 0;
        try {
            for (String id : ids) {
                try {
                    MemorySegment block = map(id, arena);
                    entries.add(new BlockFetchProtocol.Entry(BlockFetchProtocol.OK, block.byteSize(), null));
                    frames.add(Frame.host(block));
                    total += block.byteSize();
                } catch (Exception e) {
                    // Exception, not only RuntimeException: Spark's BlockId.apply throws UnrecognizedBlockId, a
                    // SparkException (checked, undeclared from Scala), for an id it cannot parse.
                    // The client gets a short reason; the details (paths on this host) stay in our log.
                    String reason = e instanceof NotAShuffleBlockException
                            ? "not a shuffle block"
                            : "could not be read on the serving executor (see its log)";
                    LOG.warn("ucx4j shuffle: block {} asked for by {}: {}", id, comm.peerAddress(), e.toString());
                    entries.add(
                            new BlockFetchProtocol.Entry(BlockFetchProtocol.ERROR, 0, "block " + id + ": " + reason));
                }
            }
            // The header frame travels in the same message: count it against the limit too.
            if (total + BlockFetchProtocol.encodeReply(entries).length > maxMessageSize) {
                // The comm would refuse the whole reply: say why, block by block, instead.
                String why = "the reply would carry " + total + " bytes, more than max-message-size (" + maxMessageSize
                        + "): raise spark.ucx4j.max-message-size on every executor";
                entries.replaceAll(e -> new BlockFetchProtocol.Entry(BlockFetchProtocol.ERROR, 0, why));
                frames.subList(1, frames.size()).clear();
                total = 0;
            }
            frames.set(0, Frame.of(BlockFetchProtocol.encodeReply(entries)));
            permits = (int) Math.min(permitsTotal, Math.max(1, (total + bytesPerPermit - 1) / bytesPerPermit));
            bytesInFlight.acquireUninterruptibly(permits);
            int held = permits;
            long bytes = total;
            comm.writeAsync(Message.of(frames)).whenComplete((ok, failure) -> {
                bytesInFlight.release(held);
                arena.close();
                if (failure == null) {
                    bytesServed.addAndGet(bytes);
                } else {
                    // The peer waits for this reply: drop the connection so that its fetch fails now.
                    LOG.warn("ucx4j shuffle: a reply to {} failed: {}", comm.peerAddress(), failure.toString());
                    comm.abort();
                }
            });
            sent = true;
        } finally {
            if (!sent) {
                if (permits > 0) {
                    bytesInFlight.release(permits);
                }
                arena.close();
            }
        }
    }

    private MemorySegment map(String id, Arena arena) throws IOException {
        BlockId blockId = BlockId.apply(id);
        if (!(blockId instanceof ShuffleBlockId) && !(blockId instanceof ShuffleBlockBatchId)) {
            throw new NotAShuffleBlockException();
        }
        ManagedBuffer data = resolver.getBlockData(blockId, Option.empty());
        if (!(data instanceof FileSegmentManagedBuffer segment)) {
            throw new IllegalStateException(
                    "the resolver gave a " + data.getClass().getName() + ", not a file range");
        }
        if (segment.getLength() == 0) {
            return MemorySegment.ofArray(new byte[0]);
        }
        File file = segment.getFile();
        try (FileChannel channel = FileChannel.open(file.toPath(), StandardOpenOption.READ)) {
            if (segment.getOffset() + segment.getLength() > channel.size()) {
                throw new IOException("the index says " + segment.getLength() + " bytes at " + segment.getOffset()
                        + " but " + file + " holds " + channel.size());
            }
            return channel.map(FileChannel.MapMode.READ_ONLY, segment.getOffset(), segment.getLength(), arena);
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
        closed = true;
        listener.close();
        List<Comm> open;
        synchronized (comms) {
            open = List.copyOf(comms);
        }
        open.forEach(Comm::abort);
    }
}
