package org.ucx4j.comm.internal;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxKeys;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerOptions;

/**
 * The UCX context and the one worker shared by every {@code ucx://} comm and listener of one
 * configuration in one {@link org.ucx4j.comm.CommContext} (as distributed-ucxx and UCXX use one worker
 * per process), counted by its users; {@link UcxRuntimes} closes it a short while after the last one
 * leaves, so that a burst of short connections does not pay for a new context each time.
 *
 * <p>One worker, not one per listener: UCX up to 1.16 aborts the process
 * ({@code async.c: Assertion `handler->async == async'}) when an event missed by one worker's async
 * context names a socket that was closed and whose number another worker's async context has reused
 * (fixed in UCX 1.17, openucx/ucx#9942). Connection churn across two workers of one process hit it
 * in about one run in five of the leak test; with a single worker every handler has the same async
 * context. It also spends one progress thread per process instead of one per listener.
 *
 * <p>Tags: each comm receives on a tag this runtime hands out ({@link #nextTag()}): unique per worker,
 * deterministic (a counter under a fixed prefix, no hash, no salt), announced to the peer in the
 * handshake. The peer sends to it; nothing else on the worker uses the prefix. Listeners receive the
 * first HELLO of IP-less clients on accept tags ({@link #nextAcceptTag()}), a range of their own that
 * a client names by number in the {@code ucx-worker://} address.
 */
final class UcxRuntime {
    private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);
    /** "U4J" in the top bytes: ucx4j-comm's tags. */
    static final long TAG_PREFIX = 0x55344A0000000000L;
    /** Accept tags: {@code ACCEPT_TAGS | n} for listener n; comm tags stay below. */
    static final long ACCEPT_TAGS = TAG_PREFIX | 0xFF00000000L;

    record Key(UcxConfig.UcxSettings settings, WorkerOptions workerOptions) {}

    private final UcxRuntimes owner;
    final Key key;
    final UcxConfig config;
    final UcxContext context;
    final UcxWorker worker;
    /** Hands out this worker's comm tags: unique per worker is all that matching needs. */
    private final AtomicLong tags = new AtomicLong();

    private final AtomicLong acceptors = new AtomicLong();
    /** The arenas received messages of this runtime's comms live in. */
    final MessageScopes scopes = new MessageScopes();
    /** Closed comms whose endpoints wait for the peer to hang up (see {@link UcxComm#endLinger()}). */
    private final Set<UcxComm> lingering = ConcurrentHashMap.newKeySet();
    /** Guarded by the owner. */
    int users;
    /** The linger timer after the last user left; guarded by the owner. */
    CompletableFuture<Void> closing;

    UcxRuntime(UcxRuntimes owner, Key key, UcxConfig config) {
        this.owner = owner;
        this.key = key;
        this.config = config;
        Ucx.configure(config);
        this.context = UcxContext.builder().config(config).name("ucx4j-comm").build();
        try {
            this.worker = context.newWorker(workerOptions(config, "ucx4j-comm"));
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    static WorkerOptions workerOptions(UcxConfig config, String name) {
        return WorkerOptions.builder()
                .progressMode(config.get(UcxKeys.PROGRESS_MODE))
                .connectTimeout(config.get(UcxKeys.CONNECT_TIMEOUT))
                .peerErrorHandling(config.get(UcxKeys.PEER_ERROR_HANDLING))
                .name(name)
                .build();
    }

    /** One more user of a runtime already held (a listener's accepted comm); pair with {@link #release()}. */
    void retain() {
        synchronized (owner) {
            if (users <= 0) {
                throw new IllegalStateException("retain() on a runtime nobody holds");
            }
            users++;
        }
    }

    /** One user less; the owner closes it after the last (never on the caller's thread, which may be UCX's). */
    void release() {
        owner.released(this);
    }

    /** Registers a closed comm that waits for its peer; false when the comm context is closing (close now). */
    boolean lingering(UcxComm comm) {
        lingering.add(comm);
        if (owner.isClosed()) { // after the add: a concurrent close either sees the comm or is seen here
            lingering.remove(comm);
            return false;
        }
        return true;
    }

    void notLingering(UcxComm comm) {
        lingering.remove(comm);
    }

    /** The comm context is closing: closed comms stop waiting for their peers. */
    void endLingers() {
        for (UcxComm c : List.copyOf(lingering)) {
            c.endLinger();
        }
    }

    /** Closes the worker and the context; the owner has already forgotten this runtime. */
    void close() {
        scopes.startAfresh();
        try {
            worker.close();
        } catch (RuntimeException e) {
            LOG.warn("closing the ucx4j-comm worker failed", e);
        }
        try {
            context.close();
        } catch (RuntimeException e) {
            LOG.warn("closing the ucx4j-comm UCX context failed", e);
        }
    }

    long nextTag() {
        long n = tags.incrementAndGet();
        if (n >= 0xFF00000000L) {
            throw new IllegalStateException("ucx4j-comm ran out of tags (2^40 comms on one worker)");
        }
        return TAG_PREFIX | n;
    }

    /** A new listener's accept tag: {@link #ACCEPT_TAGS} | n, n counting listeners from 0. */
    long nextAcceptTag() {
        long n = acceptors.getAndIncrement();
        if (n > 0xFFFFFFFFL) {
            throw new IllegalStateException("ucx4j-comm ran out of accept tags (2^32 listeners on one worker)");
        }
        return ACCEPT_TAGS | n;
    }

    /** Whether a tag is a listener's accept tag. */
    static boolean isAcceptTag(long tag) {
        return (tag & ACCEPT_TAGS) == ACCEPT_TAGS;
    }
}
