package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerOptions;

/**
 * The UCX context and the client worker shared by every {@code ucx://} comm and listener of one
 * configuration (as distributed-ucxx initialises UCX once per process), counted by its users and closed
 * a short while after the last one leaves, so that a burst of short connections does not pay for a new
 * context each time. Listeners get workers of their own from the same context.
 *
 * <p>Tags: each comm receives on a tag this runtime hands out ({@link #nextTag()}): unique per process,
 * deterministic (a counter under a fixed prefix, no hash, no salt), announced to the peer in the
 * handshake. The peer sends to it; nothing else on the worker uses the prefix.
 */
final class UcxRuntime {
    private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);
    /** "U4J" in the top bytes: ucx4j-comm's tags. */
    static final long TAG_PREFIX = 0x55344A0000000000L;
    /** A listener's worker receives first HELLOs of IP-less (ucx-worker://) clients on this tag. */
    static final long ACCEPT_TAG = TAG_PREFIX | 0xFFFFFFFFFFL;
    private static final Duration LINGER = Duration.ofSeconds(2);
    private static final Map<Key, UcxRuntime> RUNTIMES = new HashMap<>();
    private static final AtomicLong TAGS = new AtomicLong();

    private record Key(UcxConfig.UcxSettings settings, WorkerOptions workerOptions) {}

    private final Key key;
    final UcxConfig config;
    final UcxContext context;
    final UcxWorker clientWorker;
    private int users;
    private ScheduledFuture<?> closing;

    private UcxRuntime(Key key, UcxConfig config) {
        this.key = key;
        this.config = config;
        Ucx.configure(config);
        this.context = UcxContext.builder().config(config).name("ucx4j-comm").build();
        try {
            this.clientWorker = context.newWorker(workerOptions(config, "ucx4j-comm-client"));
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
    }

    static WorkerOptions workerOptions(UcxConfig config, String name) {
        return WorkerOptions.builder().progressMode(config.progressMode()).connectTimeout(config.connectTimeout())
                .peerErrorHandling(config.peerErrorHandling()).name(name).build();
    }

    /** The runtime for a configuration, created on first use; pair with {@link #release()}. */
    static UcxRuntime acquire(UcxConfig config) {
        Key key = new Key(config.ucxSettings(), workerOptions(config, "ucx4j-comm-client"));
        synchronized (RUNTIMES) {
            UcxRuntime r = RUNTIMES.get(key);
            if (r == null) {
                r = new UcxRuntime(key, config);
                RUNTIMES.put(key, r);
            }
            r.users++;
            if (r.closing != null) {
                r.closing.cancel(false);
                r.closing = null;
            }
            return r;
        }
    }

    /** One user less; the last one schedules the close (never closes on the caller's thread, which may be UCX's). */
    void release() {
        synchronized (RUNTIMES) {
            if (--users > 0) {
                return;
            }
            closing = Watchdog.schedule(this::closeIfUnused, LINGER);
        }
    }

    private void closeIfUnused() {
        synchronized (RUNTIMES) {
            if (users > 0 || RUNTIMES.get(key) != this) {
                return;
            }
            RUNTIMES.remove(key);
        }
        try {
            clientWorker.close();
        } catch (RuntimeException e) {
            LOG.warn("closing the ucx4j-comm client worker failed", e);
        }
        try {
            context.close();
        } catch (RuntimeException e) {
            LOG.warn("closing the ucx4j-comm UCX context failed", e);
        }
    }

    /** Closes every idle runtime now (tests' leak checks). */
    static void closeIdle() {
        java.util.List<UcxRuntime> idle = new java.util.ArrayList<>();
        synchronized (RUNTIMES) {
            for (UcxRuntime r : RUNTIMES.values()) {
                if (r.users == 0) {
                    idle.add(r);
                }
            }
        }
        idle.forEach(UcxRuntime::closeIfUnused);
    }

    /** How many runtimes are open (tests). */
    static int open() {
        synchronized (RUNTIMES) {
            return RUNTIMES.size();
        }
    }

    static long nextTag() {
        long n = TAGS.incrementAndGet();
        if (n >= 0xFFFFFFFFFFL) {
            throw new IllegalStateException("ucx4j-comm ran out of tags (2^40 comms in one process)");
        }
        return TAG_PREFIX | n;
    }
}
