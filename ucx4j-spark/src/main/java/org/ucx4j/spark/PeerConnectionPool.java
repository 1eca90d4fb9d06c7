package org.ucx4j.spark;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommTimeoutException;

/**
 * The fetcher's connections to peers' shuffle servers: at most {@code maxPerPeer} to one address at once
 * (lent out and idle together; a borrower beyond that waits for one to come back, within its deadline),
 * kept for the next request when given back, and closed once unused for {@code idleTimeout} (a
 * background sweep, every quarter of the timeout, at most every 5 s).
 *
 * <p>A connection lent out is the borrower's alone until it gives it back ({@link #giveBack}) or drops it
 * ({@link #drop}, after a failure); exactly one of the two frees its place.
 *
 * <p>Threading: safe from any thread. Ownership: owns every connection it holds; {@link #close()} closes
 * the idle ones, and those given back later.
 */
final class PeerConnectionPool implements AutoCloseable {
    private final CommContext context;
    private final CommOptions options;
    private final int maxPerPeer;
    private final long idleNanos;
    private final Map<URI, Peer> peers = new ConcurrentHashMap<>();
    private final ScheduledExecutorService sweeper;
    private volatile boolean closed;

    /** One address's connections; its monitor guards {@code idle} and {@code lent}. */
    private final class Peer {
        final Semaphore places = new Semaphore(maxPerPeer, true);
        final Deque<Idle> idle = new ArrayDeque<>();
        int borrowers;
    }

    private record Idle(Comm comm, long since) {}

    /**
     * A connection lent out.
     *
     * @param address the peer's address
     * @param comm the connection
     * @param reused whether it served an earlier request (so a failure may only mean the peer closed it
     *     while idle: worth one fresh connection at once)
     */
    record Lease(URI address, Comm comm, boolean reused) {}

    PeerConnectionPool(CommContext context, CommOptions options, int maxPerPeer, Duration idleTimeout) {
        this.context = context;
        this.options = options;
        this.maxPerPeer = maxPerPeer;
        this.idleNanos = idleTimeout.toNanos();
        long sweepMillis = Math.clamp(idleTimeout.toMillis() / 4, 10, 5_000);
        this.sweeper = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().daemon().name("ucx4j-shuffle-idle-close").factory());
        sweeper.scheduleWithFixedDelay(this::closeIdle, sweepMillis, sweepMillis, TimeUnit.MILLISECONDS);
    }

    /**
     * Lends a connection to {@code address}: an idle one, or a new one when none is idle and fewer than
     * {@code maxPerPeer} are open.
     *
     * @param address the peer's server
     * @param deadline {@link System#nanoTime()} by which a place must be free
     * @return the lease
     * @throws CommTimeoutException when all of the peer's places stay taken until the deadline
     * @throws org.ucx4j.comm.CommException when connecting fails (the place is freed)
     */
    Lease borrow(URI address, long deadline) {
        if (closed) {
            throw new CommClosedException("the ucx4j shuffle client is closed");
        }
        Peer peer = peers.compute(address, (a, p) -> {
            Peer q = p == null ? new Peer() : p;
            synchronized (q) {
                q.borrowers++;
            }
            return q;
        });
        boolean placed = false;
        try {
            placed = peer.places.tryAcquire(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (!placed) {
                throw new CommTimeoutException("all " + maxPerPeer + " connections to " + address + " stayed busy ("
                        + ShuffleTransportSettings.MAX_CONNECTIONS_PER_PEER + ")");
            }
            long now = System.nanoTime();
            List<Comm> stale = new ArrayList<>();
            Comm reusable = null;
            synchronized (peer) {
                Idle i;
                while ((i = peer.idle.pollFirst()) != null) {
                    if (!i.comm().isClosed() && now - i.since() < idleNanos) {
                        reusable = i.comm();
                        break;
                    }
                    stale.add(i.comm());
                }
            }
            stale.forEach(Comm::abort);
            if (reusable != null) {
                return new Lease(address, reusable, true);
            }
            return new Lease(address, context.connect(address, options), false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CommClosedException("interrupted while waiting for a connection to " + address);
        } catch (RuntimeException e) {
            if (placed) {
                peer.places.release();
            }
            leave(address, peer);
            throw e;
        }
    }

    /**
     * Takes a connection back for the next request to its peer (or closes it when the pool is closed).
     *
     * @param lease what {@link #borrow} lent
     */
    void giveBack(Lease lease) {
        Peer peer = peers.get(lease.address());
        if (closed) {
            lease.comm().close();
        } else {
            synchronized (peer) {
                peer.idle.addFirst(new Idle(lease.comm(), System.nanoTime()));
            }
        }
        peer.places.release();
        leave(lease.address(), peer);
    }

    /**
     * Aborts a connection that failed and frees its place.
     *
     * @param lease what {@link #borrow} lent
     */
    void drop(Lease lease) {
        lease.comm().abort();
        Peer peer = peers.get(lease.address());
        peer.places.release();
        leave(lease.address(), peer);
    }

    private void leave(URI address, Peer peer) {
        peers.computeIfPresent(address, (a, p) -> {
            synchronized (p) {
                p.borrowers--;
                return p.borrowers == 0 && p.idle.isEmpty() ? null : p;
            }
        });
    }

    /**
     * Connections to {@code address} kept idle now (for tests and logs).
     *
     * @param address the peer's server
     * @return the count
     */
    int idleCount(URI address) {
        Peer peer = peers.get(address);
        if (peer == null) {
            return 0;
        }
        synchronized (peer) {
            return peer.idle.size();
        }
    }

    /** Closes the connections unused for the idle timeout, and forgets peers left with none. */
    private void closeIdle() {
        long now = System.nanoTime();
        List<Comm> expired = new ArrayList<>();
        for (URI address : peers.keySet()) {
            peers.computeIfPresent(address, (a, p) -> {
                synchronized (p) {
                    // Newest first: the expired ones are at the tail.
                    while (!p.idle.isEmpty() && now - p.idle.peekLast().since() >= idleNanos) {
                        expired.add(p.idle.pollLast().comm());
                    }
                    return p.borrowers == 0 && p.idle.isEmpty() ? null : p;
                }
            });
        }
        for (Comm c : expired) {
            try {
                c.close();
            } catch (RuntimeException e) {
                c.abort();
            }
        }
    }

    /**
     * Closes the idle connections to one peer (its executor is gone).
     *
     * @param address the peer's server
     */
    void closeIdle(URI address) {
        List<Comm> gone = new ArrayList<>();
        peers.computeIfPresent(address, (a, p) -> {
            synchronized (p) {
                p.idle.forEach(i -> gone.add(i.comm()));
                p.idle.clear();
                return p.borrowers == 0 ? null : p;
            }
        });
        gone.forEach(Comm::abort);
    }

    @Override
    public void close() {
        closed = true;
        sweeper.shutdownNow();
        for (URI address : List.copyOf(peers.keySet())) {
            List<Comm> open = new ArrayList<>();
            Peer peer = peers.get(address);
            if (peer == null) {
                continue;
            }
            synchronized (peer) {
                peer.idle.forEach(i -> open.add(i.comm()));
                peer.idle.clear();
            }
            open.forEach(Comm::close);
        }
    }
}
