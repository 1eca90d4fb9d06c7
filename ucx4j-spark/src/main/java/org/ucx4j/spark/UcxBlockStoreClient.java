package org.ucx4j.spark;

import java.net.URI;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommAuthenticationException;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.CommTimeoutException;
import org.ucx4j.comm.Message;

/**
 * Spark's {@link BlockStoreClient} over ucx4j comms: {@code ShuffleBlockFetcherIterator} hands it every
 * remote shuffle fetch, already bounded by Spark's {@code spark.reducer.maxSizeInFlight},
 * {@code spark.reducer.maxReqsInFlight} and {@code spark.reducer.maxBlocksInFlightPerAddress}.
 *
 * <p>Each {@link #fetchBlocks} runs on a virtual thread of its own (one per request: a fetch of more
 * blocks than one reply may carry, {@link #requestLimit}, is split): it takes an idle comm to the peer's
 * server (or connects one), sends the request and waits for the reply, both within one
 * {@code spark.ucx4j.shuffle.timeout}, checks that every block came whole, and completes the listener
 * exactly once per block (a listener that throws is logged, not retried or failed again). Any failure (peer dead or unreachable, refused handshake, a block the peer
 * could not serve, a reply that does not match its header, a timeout) completes the listener with
 * {@link BlockFetchingListener#onBlockFetchFailure} for every block not yet delivered, which Spark turns
 * into a {@code FetchFailedException} and a re-run of the map stage; so does a failing address lookup at
 * the driver (any {@link Throwable}, Spark's checked exceptions included). A connection that failed is retried
 * {@code spark.shuffle.io.maxRetries} times, {@code spark.shuffle.io.retryWait} apart, as Spark's Netty
 * client does; errors the peer reported are not.
 *
 * <p>Connections: at most {@code spark.ucx4j.shuffle.maxConnectionsPerPeer} to one peer at once (a fetch
 * beyond that waits for one, within its timeout), kept for the next request and closed after
 * {@code spark.ucx4j.shuffle.idleTimeout} unused ({@link PeerConnectionPool}). A kept connection that
 * turns out closed by the peer (its server closes connections idle for twice that, or at its own cap) is
 * replaced by a fresh one at once, without counting as a retry. After a connection failure the peer's
 * address is asked of the driver again: an executor Spark has removed fails the fetch at once.
 *
 * <p>Threading: safe from any thread. Ownership: the shuffle manager owns it; {@link #close()} closes idle
 * comms (fetches in flight fail).
 */
final class UcxBlockStoreClient extends BlockStoreClient {
    private static final Logger LOG = LoggerFactory.getLogger(UcxBlockStoreClient.class);

    private final CommContext context;
    private final ShuffleTransportSettings settings;
    private final PeerDirectory registry;
    private final String localExecutorId;
    private final PeerConnectionPool connections;
    private final ThreadFactory threads =
            Thread.ofVirtual().name("ucx4j-shuffle-fetch-", 0).factory();
    private final AtomicLong bytesFetched = new AtomicLong();
    private volatile boolean closed;

    UcxBlockStoreClient(
            CommContext context, ShuffleTransportSettings settings, PeerDirectory registry, String localExecutorId) {
        this.context = context;
        this.settings = settings;
        this.registry = registry;
        this.localExecutorId = localExecutorId;
        this.connections = new PeerConnectionPool(
                context, settings.options(), settings.maxConnectionsPerPeer(), settings.idleTimeout());
    }

    /**
     * Connections to {@code address} kept idle for the next request now.
     *
     * @param address a peer's server
     * @return the count
     */
    int idleConnections(URI address) {
        return connections.idleCount(address);
    }

    /**
     * Bytes of blocks fetched through ucx4j by this executor.
     *
     * @return the count
     */
    long bytesFetched() {
        return bytesFetched.get();
    }

    @Override
    public void fetchBlocks(
            String host,
            int port,
            String execId,
            String[] blockIds,
            BlockFetchingListener listener,
            DownloadFileManager downloadFileManager) {
        // One request carries at most what the server accepts (BlockFetchProtocol.MAX_BLOCKS) and what its
        // reply can carry (a frame per block plus the header within max-frames): split larger fetches.
        int perRequest = requestLimit(settings.options().maxFrames());
        for (int from = 0; from < blockIds.length; from += perRequest) {
            String[] ids = Arrays.copyOfRange(blockIds, from, Math.min(blockIds.length, from + perRequest));
            threads.newThread(() -> fetchWithRetries(execId, ids, listener)).start();
        }
    }

    /**
     * Most block ids one request may carry.
     *
     * @param maxFrames the comms' {@code max-frames}
     * @return at least 1
     */
    static int requestLimit(int maxFrames) {
        return Math.max(1, Math.min(BlockFetchProtocol.MAX_BLOCKS, maxFrames - 1));
    }

    private void fetchWithRetries(String execId, String[] ids, BlockFetchingListener listener) {
        // settled[i]: block i has had its one callback (or is having it); failures skip it.
        boolean[] settled = new boolean[ids.length];
        int attempt = 0;
        while (true) {
            try {
                if (closed) {
                    throw new CommException("the ucx4j shuffle client is closed");
                }
                fetch(registry.lookup(execId), execId, ids, listener, settled);
                return;
            } catch (StaleConnectionException e) {
                // A kept connection the peer had closed (idle, or at its connection cap): a fresh one at
                // once, not counted as a retry. Each round uses up one kept connection, so this ends.
                LOG.debug("ucx4j shuffle: a kept connection to executor {} was closed ({}); reconnecting", execId, e);
            } catch (RetriableFetchException e) {
                // The address may be stale (the executor is gone): ask the driver again, which fails at
                // once (no retries) when Spark removed the executor.
                registry.forget(execId);
                try {
                    registry.lookup(execId);
                } catch (Throwable gone) {
                    gone.addSuppressed(e.getCause());
                    failUnsettled(ids, settled, listener, gone);
                    return;
                }
                if (attempt++ < settings.maxRetries() && !closed) {
                    LOG.info(
                            "ucx4j shuffle: fetching {} blocks from executor {} failed ({}); retry {} of {} in {}",
                            ids.length,
                            execId,
                            e.getCause().toString(),
                            attempt,
                            settings.maxRetries(),
                            settings.retryWait());
                    if (!pause()) {
                        failUnsettled(ids, settled, listener, e.getCause());
                        return;
                    }
                    continue;
                }
                failUnsettled(ids, settled, listener, e.getCause());
                return;
            } catch (Throwable e) {
                // Anything else, checked exceptions included: the driver's registry is Scala code whose
                // askSync throws SparkException and RpcTimeoutException undeclared. Every block not yet
                // delivered must fail, or the reducer waits for it forever (and an uncaught throw here
                // would end the executor).
                failUnsettled(ids, settled, listener, e);
                return;
            }
        }
    }

    private boolean pause() {
        try {
            TimeUnit.MILLISECONDS.sleep(settings.retryWait().toMillis());
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** A kept connection failed before any block was delivered: the peer may have closed it meanwhile. */
    private static final class StaleConnectionException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StaleConnectionException(RuntimeException cause) {
            super(cause);
        }
    }

    /** A failure of the connection itself (before any block was delivered), worth another try. */
    private static final class RetriableFetchException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RetriableFetchException(RuntimeException cause) {
            super(cause);
        }
    }

    private void fetch(URI address, String execId, String[] ids, BlockFetchingListener listener, boolean[] settled) {
        // One deadline for a free connection, the request's write and the reply's read: a peer that stops
        // taking data must not hold the fetch longer than a silent one.
        long deadline = System.nanoTime() + settings.fetchTimeout().toNanos();
        PeerConnectionPool.Lease lease;
        try {
            lease = connections.borrow(address, deadline);
        } catch (CommAuthenticationException | CommTimeoutException e) {
            throw e;
        } catch (CommException e) {
            throw new RetriableFetchException(e);
        }
        Comm comm = lease.comm();
        Message reply;
        try {
            awaitWrite(comm.writeAsync(Message.ofBytes(BlockFetchProtocol.encodeRequest(ids))), deadline);
            reply = comm.read(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        } catch (CommTimeoutException e) {
            connections.drop(lease);
            throw new CommTimeoutException(
                    "executor " + execId + " (" + address + ") did not take the request for or reply to a fetch of "
                            + ids.length
                            + " blocks within " + settings.fetchTimeout() + " ("
                            + ShuffleTransportSettings.FETCH_TIMEOUT
                            + ")",
                    e);
        } catch (CommException e) {
            connections.drop(lease);
            throw lease.reused() ? new StaleConnectionException(e) : new RetriableFetchException(e);
        }
        deliver(lease, execId, ids, reply, listener, settled);
    }

    private static void awaitWrite(CompletableFuture<Void> write, long deadline) {
        try {
            write.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new CommTimeoutException("the request was not sent", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw new CommException("sending the request failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommException("interrupted while sending the request", e);
        }
    }

    private void deliver(
            PeerConnectionPool.Lease lease,
            String execId,
            String[] ids,
            Message reply,
            BlockFetchingListener listener,
            boolean[] settled) {
        URI address = lease.address();
        List<BlockFetchProtocol.Entry> entries;
        try {
            if (reply.frameCount() < 1) {
                throw new CommProtocolException("an empty shuffle fetch reply");
            }
            entries = BlockFetchProtocol.decodeReply(reply.frame(0).toByteArray(), ids.length);
            int served = (int) entries.stream()
                    .filter(e -> e.status() == BlockFetchProtocol.OK)
                    .count();
            if (reply.frameCount() != served + 1) {
                throw new CommProtocolException("shuffle fetch reply from " + address + " carries "
                        + (reply.frameCount() - 1) + " blocks, its header announces " + served);
            }
            int frame = 1;
            for (BlockFetchProtocol.Entry e : entries) {
                if (e.status() == BlockFetchProtocol.OK) {
                    long got = reply.frame(frame++).size();
                    if (got != e.size()) {
                        throw new CommProtocolException(
                                "truncated shuffle block from " + address + ": " + got + " bytes of " + e.size());
                    }
                }
            }
        } catch (RuntimeException e) {
            reply.close();
            connections.drop(lease);
            throw e;
        }
        connections.giveBack(lease);
        int served = reply.frameCount() - 1;
        long bytes = 0;
        for (int f = 1; f <= served; f++) {
            bytes += reply.frame(f).size();
        }
        // Reported before the blocks reach Spark, so that the report is on its way before the task ends.
        bytesFetched.addAndGet(bytes);
        if (bytes > 0) {
            try {
                registry.reportFetched(localExecutorId, bytes);
            } catch (Throwable e) {
                LOG.warn("ucx4j shuffle: reporting {} fetched bytes to the driver failed: {}", bytes, e.toString());
            }
        }
        ReceivedBlockBuffer.SharedReply shared = new ReceivedBlockBuffer.SharedReply(reply, served + 1);
        int frame = 1;
        try {
            for (int i = 0; i < ids.length; i++) {
                BlockFetchProtocol.Entry e = entries.get(i);
                settled[i] = true;
                if (e.status() == BlockFetchProtocol.OK) {
                    ReceivedBlockBuffer buffer =
                            new ReceivedBlockBuffer(shared, reply.frame(frame).segment());
                    frame++;
                    try {
                        listener.onBlockFetchSuccess(ids[i], buffer);
                    } catch (Throwable t) {
                        LOG.warn("ucx4j shuffle: Spark's listener failed on block {}: {}", ids[i], t.toString());
                    } finally {
                        buffer.release();
                    }
                } else {
                    notifyFailure(
                            listener,
                            ids[i],
                            new CommException(
                                    "executor " + execId + " (" + address + ") could not serve " + e.error()));
                }
            }
        } finally {
            // Blocks never handed out (a throw above) hold a reference each: drop them with ours.
            for (int f = frame; f <= served + 1; f++) {
                shared.release();
            }
        }
    }

    private static void failUnsettled(
            String[] ids, boolean[] settled, BlockFetchingListener listener, Throwable cause) {
        for (int i = 0; i < ids.length; i++) {
            if (!settled[i]) {
                settled[i] = true;
                notifyFailure(listener, ids[i], cause);
            }
        }
    }

    private static void notifyFailure(BlockFetchingListener listener, String id, Throwable cause) {
        try {
            listener.onBlockFetchFailure(id, cause);
        } catch (Throwable t) {
            LOG.warn("ucx4j shuffle: Spark's listener failed on the failure of block {}: {}", id, t.toString());
        }
    }

    @Override
    public void close() {
        closed = true;
        connections.close();
    }
}
