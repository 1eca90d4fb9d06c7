package org.ucx4j.comm.internal;

import java.util.List;
import java.util.Map;
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
 * leaves, so that a burst of short connections does not pay for a new context each time. A runtime whose
 * {@link Key#isSameHost()} is kept instead for the socket {@code ucx://} comms with one same-host peer
 * process, on shared memory ({@link SameHost}).
 *
 * <p>One worker, not one per listener: UCX up to 1.16 aborts the process
 * ({@code async.c: Assertion `handler->async == async'}) when an event missed by one worker's async
 * context names a socket that was closed and whose number another worker's async context has reused
 * (fixed in UCX 1.17, openucx/ucx#9942). Connection churn across two workers of one process hit it
 * in about one run in five of the leak test; with a single worker every handler has the same async
 * context. It also spends one progress thread per process instead of one per listener. Same-host
 * workers are the exception, and keep to transports without sockets of UCX's (shared memory, GPU),
 * whose churn is what that abort needs; each has a progress thread of its own.
 *
 * <p>Tags (docs/WIRE.md, "Tags"): UCX matches tags per worker, not per endpoint, so a tag is all
 * that keeps a peer's messages out of another peer's comm. Each comm (and each IP-less handshake)
 * receives on a tag drawn at random ({@link #nextTag()}): this runtime's 16-bit random prefix, then
 * 46 random bits and two zero bits, redrawn while in use here; a comm's tag is told to its peer only
 * after the handshake authenticated it. A comm uses its tag's three neighbours: the tag itself for
 * message headers, {@code | 1} ({@link #FRAMES}) for frames, {@code | 2} ({@link #CONTROL}) for flow
 * control records. Listeners receive the first HELLO of IP-less clients on accept tags
 * ({@link #nextAcceptTag()}), a public range of their own ({@link #ACCEPT_TAGS}) that a client
 * names by number in the {@code ucx-worker://} address; the prefix never equals theirs.
 *
 * <p>Unmatched messages: a message to a tag nobody receives would stay in UCX's unexpected queue for
 * good. {@link #drain()} runs every {@link #DRAIN_INTERVAL} and discards every unexpected message
 * whose tag lies outside the prefix (no comm's can), and, inside it, the oldest ones while they
 * belong to no live tag (see docs/WIRE.md for what this leaves).
 */
final class UcxRuntime {
    private static final Logger LOG = LoggerFactory.getLogger(UcxRuntime.class);
    /** "U4J" in the top bytes, then 0xFF: listener accept tags are {@code ACCEPT_TAGS | n}. */
    static final long ACCEPT_TAGS = 0x55344AFF00000000L;
    /** The bits of a tag that hold a runtime's random prefix. */
    static final long PREFIX_MASK = 0xFFFF000000000000L;
    /** The low bits of a comm's tags that say what travels there: 0 headers, 1 frames, 2 control records. */
    static final long CHANNEL_MASK = 3L;
    /** A comm's frames travel on its tag {@code | FRAMES}. */
    static final long FRAMES = 1L;
    /** A comm's flow control records travel on its tag {@code | CONTROL}. */
    static final long CONTROL = 2L;
    /** How often unexpected messages to no live tag are discarded. */
    static final java.time.Duration DRAIN_INTERVAL = java.time.Duration.ofMillis(100);
    /** The most messages one drain round discards per probe pattern (the rest wait for the next). */
    private static final int DRAIN_BATCH = 4096;
    /**
     * How long one drain keeps going while it still finds messages; when it stops with more left, the
     * next starts after {@link #DRAIN_AGAIN} instead of a whole interval, so the drain keeps up with a
     * flood as fast as the worker can discard (a fixed batch per interval capped it at ~330,000
     * messages a second: a faster sender grew UCX's unexpected queue without bound).
     */
    private static final long DRAIN_BUDGET_NANOS = 20_000_000L;

    private static final java.time.Duration DRAIN_AGAIN = java.time.Duration.ofMillis(1);
    /**
     * What one pass must discard for the drain to go on at once: a trickle waits for the next interval,
     * so a slow sender of garbage cannot keep the drain (and the progress thread it uses) busy.
     */
    private static final int DRAIN_FLOOD = 256;

    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    /**
     * What makes two configurations share a runtime: their UCX settings, worker options, the comm's own
     * UCX options, and for a same-host worker the peer process it is kept for ({@code ""} for the shared
     * runtime).
     */
    record Key(
            UcxConfig.UcxSettings settings,
            WorkerOptions workerOptions,
            Map<String, String> commOptions,
            String peerProcess) {
        /** The shared runtime's key. */
        static Key of(UcxConfig config) {
            return new Key(config.ucxSettings(), UcxRuntime.workerOptions(config, "ucx4j-comm"), Map.of(), "");
        }

        /**
         * The key of the worker kept for one same-host peer process ({@link SameHost}), on the shared
         * runtime's transports of {@link SameHost#TRANSPORTS} ({@code transports}, comma-separated).
         */
        Key sameHost(UcxConfig config, String transports, String peerProcess) {
            return new Key(
                    settings,
                    UcxRuntime.workerOptions(config, "ucx4j-comm-same-host"),
                    sameHostOptions(transports),
                    peerProcess);
        }

        /** Whether this is the key of a worker kept for one same-host peer process. */
        boolean isSameHost() {
            return !peerProcess.isEmpty();
        }
    }

    /** UCX's options that tell its shared memory transports to report peer failure (1.13 to 1.22 at least). */
    static final List<String> SHARED_MEMORY_ERROR_HANDLING =
            List.of("MM_ERROR_HANDLING", "POSIX_ERROR_HANDLING", "SYSV_ERROR_HANDLING");

    /**
     * The UCX options of a worker kept for one same-host peer process ({@link SameHost}), beyond the
     * configuration's: {@code TLS} = {@code transports} (one shared memory transport and the shared
     * runtime's GPU transports: no network transport, and nothing a user's {@code tls} left out); and
     * each of {@link #SHARED_MEMORY_ERROR_HANDLING} {@code = y}, whatever the configuration or the process
     * environment says (they are for the shared worker): without them, endpoints that detect peer failure
     * would have no transport between the two same-host workers at all, and two processes that differ
     * there would pick different lanes for one pair (UCX 1.13 aborts on that). And the {@code sysv} and
     * {@code posix} segment size, FIFO length, FIFO element size and allocation chunk of {@link SameHost}, also whatever the
     * environment says (under the {@code MM_} names too, the only ones UCX 1.13 applies): the two sides of a
     * pair must agree on them ({@link SameHost#hostPart}). The comms over it learn of
     * a dead peer from their handshake sockets at once (see {@link UcxComm}); UCX's own check runs at its
     * usual interval.
     */
    static Map<String, String> sameHostOptions(String transports) {
        Map<String, String> options = new java.util.TreeMap<>();
        options.put("TLS", transports);
        for (String name : SHARED_MEMORY_ERROR_HANDLING) {
            options.put(name, "y");
        }
        // MM_ reaches both transports on UCX 1.13 (whose UCT options match only by the shared table's own
        // prefix: a SYSV_ name is dropped there without an error) and on 1.22; SYSV_ and POSIX_ override
        // what the environment says under those names on 1.22.
        for (String transport : List.of("MM", "SYSV", "POSIX")) {
            options.put(transport + "_SEG_SIZE", Integer.toString(SameHost.SEGMENT_SIZE));
            options.put(transport + "_FIFO_SIZE", Integer.toString(SameHost.FIFO_SIZE));
            options.put(transport + "_FIFO_ELEM_SIZE", Integer.toString(SameHost.FIFO_ELEMENT_SIZE));
            options.put(transport + "_RX_BUFS_GROW", Integer.toString(SameHost.RX_BUFS_GROW));
        }
        return Map.copyOf(options);
    }

    private final UcxRuntimes owner;
    final Key key;
    final UcxConfig config;
    final UcxContext context;
    final UcxWorker worker;
    /** This runtime's tag prefix, in the top 16 bits; never that of {@link #ACCEPT_TAGS}. */
    private final long prefix;
    /** Tags some comm or handshake of this worker receives on (accept tags excluded; low bits zero). */
    private final Set<Long> liveTags = ConcurrentHashMap.newKeySet();
    /**
     * Tags still held (never drawn again) whose unexpected messages the drain discards: a comm that saw
     * its peer's close marker or a protocol error receives nothing more there.
     */
    private final Set<Long> quarantined = ConcurrentHashMap.newKeySet();
    /** What to tell a comm whose frame tag got a frame it never asked for (flow control, docs/WIRE.md). */
    private final Map<Long, Runnable> strayFrameHandlers = new ConcurrentHashMap<>();
    /** The next drain round; guarded by itself. */
    private final java.util.concurrent.atomic.AtomicReference<CompletableFuture<Void>> drainTimer =
            new java.util.concurrent.atomic.AtomicReference<>();

    private volatile boolean closed;
    /** Messages {@link #drain()} discarded so far. */
    private final AtomicLong discarded = new AtomicLong();

    private final AtomicLong acceptors = new AtomicLong();
    /** The arenas received messages of this runtime's comms live in: the comm context's, shared. */
    final MessageScopes scopes;
    /** Closed comms whose endpoints wait for the peer to hang up (see {@link UcxComm#endLinger()}). */
    private final Set<UcxComm> lingering = ConcurrentHashMap.newKeySet();
    /** Guarded by the owner. */
    int users;
    /** The linger timer after the last user left; guarded by the owner. */
    CompletableFuture<Void> closing;

    UcxRuntime(UcxRuntimes owner, Key key, UcxConfig config) {
        this.owner = owner;
        this.scopes = owner.scopes;
        this.key = key;
        this.config = config;
        Ucx.configure(config);
        this.context = UcxContext.builder()
                .config(config)
                .options(key.commOptions())
                .name(key.workerOptions().name())
                .build();
        try {
            this.worker = context.newWorker(key.workerOptions());
        } catch (RuntimeException e) {
            context.close();
            throw e;
        }
        long p;
        do {
            p = RANDOM.nextLong() & PREFIX_MASK;
        } while (p == (ACCEPT_TAGS & PREFIX_MASK));
        this.prefix = p;
        scheduleDrain();
    }

    static WorkerOptions workerOptions(UcxConfig config, String name) {
        return WorkerOptions.builder()
                .progressMode(config.get(UcxKeys.PROGRESS_MODE))
                .connectTimeout(config.get(UcxKeys.CONNECT_TIMEOUT))
                .spin(config.get(UcxKeys.PROGRESS_SPIN))
                .peerErrorHandling(config.get(UcxKeys.PEER_ERROR_HANDLING))
                .name(name)
                .build();
    }

    /**
     * What a same-host worker of this (shared) runtime's configuration runs on, comma-separated: one
     * shared memory transport of this runtime's ({@code sysv}, else {@code posix}: {@link SameHost#SHARED_MEMORY})
     * and those of its other transports in {@link SameHost#TRANSPORTS}; or {@code ""} when it has no
     * shared memory transport (the configuration left it out: same-host workers would gain nothing).
     */
    String sameHostTransports() {
        String t = sameHostTransports;
        if (t == null) {
            List<String> all = context.transports();
            java.util.Optional<String> memory =
                    SameHost.SHARED_MEMORY.stream().filter(all::contains).findFirst();
            List<String> kept = new java.util.ArrayList<>();
            memory.ifPresent(kept::add);
            all.stream().filter(SameHost.TRANSPORTS::contains).forEach(kept::add);
            t = memory.isPresent() ? String.join(",", kept) : "";
            sameHostTransports = t; // racing threads compute the same string
        }
        return t;
    }

    private volatile String sameHostTransports;

    /** The comm context's runtimes this one belongs to. */
    UcxRuntimes owner() {
        return owner;
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

    /**
     * Registers a closed comm that waits for its peer; false when the comm context is closing or the JVM
     * exiting (close now).
     */
    boolean lingering(UcxComm comm) {
        lingering.add(comm);
        if (owner.endsLingersNow()) { // after the add: a concurrent close either sees the comm or is seen here
            lingering.remove(comm);
            return false;
        }
        return true;
    }

    /** Whether closed comms should close now rather than wait (the comm context closing, the JVM exiting). */
    boolean endsLingersNow() {
        return owner.endsLingersNow();
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
        closed = true;
        CompletableFuture<Void> t = drainTimer.getAndSet(null);
        if (t != null) {
            t.cancel(false);
        }
        // The scopes are the comm context's: retiring their current slab is harmless to other runtimes'
        // comms (open messages keep it), and keeps a slab from staying after the last runtime went.
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

    /**
     * A fresh random tag for a comm or handshake to receive on, registered as live until
     * {@link #releaseTag(long)}: the prefix, then 48 random bits, never a live tag nor an accept tag.
     */
    long nextTag() {
        while (true) {
            long t = prefix | (RANDOM.nextLong() & ~PREFIX_MASK & ~CHANNEL_MASK);
            if (!quarantined.contains(t) && liveTags.add(t)) {
                return t;
            }
        }
    }

    /**
     * Tells the drain which comm owns {@code tag}'s frame channel: a frame found there unexpected is one
     * the comm never asked for ({@code handler} fails the comm; the frame is discarded).
     */
    void watchFrames(long tag, Runnable handler) {
        strayFrameHandlers.put(tag, handler);
    }

    /**
     * A comm's tag that receives nothing more (close marker seen, protocol error): its unexpected
     * messages are discarded from now on, but it is not drawn again until {@link #releaseTag}.
     */
    void quarantineTag(long tag) {
        quarantined.add(tag);
        strayFrameHandlers.remove(tag);
        liveTags.remove(tag);
    }

    /** A tag nobody receives on any more: its messages are drained from now on. */
    void releaseTag(long tag) {
        strayFrameHandlers.remove(tag);
        liveTags.remove(tag);
        quarantined.remove(tag);
    }

    /** How many unexpected messages the drain discarded since this runtime started. */
    long discarded() {
        return discarded.get();
    }

    private void scheduleDrain() {
        scheduleDrain(DRAIN_INTERVAL);
    }

    private void scheduleDrain(java.time.Duration after) {
        if (closed) {
            return;
        }
        drainTimer.set(CommTimers.after(after, () -> {
            boolean more = false;
            try {
                long until = System.nanoTime() + DRAIN_BUDGET_NANOS;
                int n;
                do {
                    n = drain();
                    more = n >= DRAIN_FLOOD;
                } while (more && System.nanoTime() - until < 0);
            } catch (RuntimeException e) {
                if (!closed) {
                    LOG.debug("ucx4j-comm: draining unmatched tag messages failed: {}", e.toString());
                }
            }
            scheduleDrain(more ? DRAIN_AGAIN : DRAIN_INTERVAL);
        }));
    }

    /**
     * Discards unexpected messages that no comm will receive: every one whose tag differs from the
     * prefix in some bit (one probe pattern per prefix bit); then every frame-channel message (a comm
     * posts its frame receives before it lets its peer send them, so an unexpected frame is one nobody
     * asked for: its comm, if live, fails); then, inside the prefix, the oldest while its tag is not
     * live. A live tag's message at the head stops the last part until its comm reads it (UCX's probe
     * shows only the oldest match); those behind it wait for the next round.
     *
     * @return how many messages were discarded
     */
    int drain() {
        int n = 0;
        for (int b = 48; b < 64; b++) {
            long bit = 1L << b;
            n += worker.tagDiscard(~prefix & bit, bit, DRAIN_BATCH);
        }
        for (int i = 0; i < DRAIN_BATCH; i++) {
            java.util.Optional<org.ucx4j.TagInfo> frame = worker.tagProbe(prefix | FRAMES, PREFIX_MASK | CHANNEL_MASK);
            if (frame.isEmpty()) {
                break;
            }
            long tag = frame.get().senderTag();
            n += worker.tagDiscard(tag, -1L, 1);
            Runnable stray = strayFrameHandlers.remove(tag & ~CHANNEL_MASK);
            if (stray != null) {
                stray.run();
            }
        }
        for (int i = 0; i < DRAIN_BATCH; i++) {
            java.util.Optional<org.ucx4j.TagInfo> head = worker.tagProbe(prefix, PREFIX_MASK);
            if (head.isEmpty() || liveTags.contains(head.get().senderTag() & ~CHANNEL_MASK)) {
                break;
            }
            n += worker.tagDiscard(head.get().senderTag(), -1L, 1);
        }
        discarded.addAndGet(n);
        if (n > 0) {
            LOG.debug("ucx4j-comm: discarded {} tag messages that no comm receives", n);
        }
        return n;
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
