package org.ucx4j.comm;

import java.time.Duration;
import java.util.List;
import org.ucx4j.ConfigKey;

/**
 * ucx4j-comm's configuration keys: message limits, the multi-send switch and the handshake's shared
 * secret. Read with {@code config.get(CommKeys.MAX_FRAMES)} on a {@link org.ucx4j.UcxConfig}; set with
 * {@code UcxConfig.builder().set(CommKeys.MAX_FRAMES, 10)}, {@code -Ducx4j.max-frames=10},
 * {@code UCX4J__MAX_FRAMES=10} or {@code max-frames: 10} in {@code ucx4j.yaml}. {@link CommOptions} reads
 * them for the comms it configures. They are registered with the configuration whenever ucx4j-comm is on
 * the class or module path; docs/CONFIGURATION.md describes each.
 *
 * <p>Threading: immutable constants.
 */
public final class CommKeys {
    /** Send all frames of a message in one multi-send ({@code ucx://} only). Unset: one send per frame. */
    public static final ConfigKey<Boolean> MULTI_BUFFER =
            ConfigKey.flag("multi-buffer", "send all frames of a message in one multi-send");
    /** The most frames one message may carry; a peer claiming more is refused (default 100000). */
    public static final ConfigKey<Integer> MAX_FRAMES = ConfigKey.count(
            "max-frames", 100_000, "most frames one message may carry; a peer claiming more is refused");
    /** The largest single frame accepted from a peer: at least 1 byte (default 64 GiB). */
    public static final ConfigKey<Long> MAX_FRAME_SIZE =
            ConfigKey.size("max-frame-size", 64L << 30, 1, Long.MAX_VALUE, "largest single frame accepted from a peer");
    /**
     * The most bytes one message may carry, all frames together: at least 1 byte (default 4 GiB). A peer
     * whose frame table adds up to more is refused before anything is allocated; a write of a larger
     * message fails before anything is sent.
     */
    public static final ConfigKey<Long> MAX_MESSAGE_SIZE = ConfigKey.size(
            "max-message-size",
            4L << 30,
            1,
            Long.MAX_VALUE,
            "most bytes one message may carry, all frames together; a peer claiming more is refused");
    /**
     * The most bytes one comm receives ahead of its reader (default 256 MiB). {@code ucx://}: past it, the
     * next message's header is not received until the reader catches up (one message may go beyond it);
     * {@code tcp://}: a message's bytes are taken before its memory is allocated and given back once it is
     * complete, and a message larger than the whole limit is received alone.
     */
    public static final ConfigKey<Long> MAX_IN_FLIGHT = ConfigKey.size(
            "max-in-flight", 256L << 20, 1, Long.MAX_VALUE, "most bytes one comm receives ahead of its reader");
    /**
     * The most bytes all comms accepted by one listener receive ahead of their readers together (default
     * 1 GiB): a message whose frames would go beyond it waits, its sender held back by UCX or by TCP's
     * window, until others are read (one message may go beyond it when nothing else is in flight).
     */
    public static final ConfigKey<Long> MAX_IN_FLIGHT_PER_LISTENER = ConfigKey.size(
            "max-in-flight-per-listener",
            1L << 30,
            1,
            Long.MAX_VALUE,
            "most bytes the comms of one listener receive ahead of their readers, together");
    /**
     * The most handshakes one {@code ucx://} or {@code tcp://} listener runs at a time ({@code ucx://}: socket
     * and IP-less together; default 128); a connection beyond it is closed at once.
     */
    public static final ConfigKey<Integer> MAX_PENDING_HANDSHAKES = ConfigKey.count(
            "max-pending-handshakes",
            128,
            "most handshakes one ucx:// or tcp:// listener runs at a time; a connection beyond it is closed at once");
    /**
     * The most of a listener's {@link #MAX_PENDING_HANDSHAKES} that one source (an IPv4 address, an IPv6
     * /64) may hold at a time (default 32; more than the total means the total), so that one address
     * cannot keep everyone else out: a connection beyond it takes the slot of its own source's oldest
     * handshake once that is {@link #HANDSHAKE_EVICTION_AGE} old (never another source's), else it is
     * closed at once. Every local client is one source. Raise it where many processes of one host connect
     * to one listener at the same moment.
     */
    public static final ConfigKey<Integer> MAX_PENDING_HANDSHAKES_PER_SOURCE = ConfigKey.count(
            "max-pending-handshakes-per-source",
            32,
            "most handshakes one source address may have under way at one listener at a time");
    /**
     * How old the oldest handshake under way at a listener must be for a newcomer to take its slot when
     * every slot ({@link #MAX_PENDING_HANDSHAKES}) is taken, or when the newcomer's source holds its share
     * ({@link #MAX_PENDING_HANDSHAKES_PER_SOURCE}: then the oldest of that source) (default 1 s; {@code 0}
     * never: the newcomer is refused). The oldest is closed, its handshake failing as "cut short". Honest
     * handshakes take milliseconds, so only a slow or silent peer is ever cut: whoever wants to keep honest
     * clients out must then open slots faster than they age, not just hold a few silent connections until
     * {@code connect-timeout}.
     */
    public static final ConfigKey<Duration> HANDSHAKE_EVICTION_AGE = ConfigKey.duration(
            "handshake-eviction-age",
            Duration.ofSeconds(1),
            Duration.ZERO,
            Duration.ofDays(1),
            "age at which a listener's oldest handshake under way (of the newcomer's source, when that holds its"
                    + " share) gives its slot to a newcomer when all are taken; 0 never");
    /**
     * The most memory that received messages not yet closed may hold in one comm context (at least 1 MiB;
     * default 1 GiB). Above it the context's comms stop receiving (the peers' data waits with them),
     * unreachable messages are given a chance to be reclaimed, and a read still waiting after the
     * comm's connect timeout fails with a {@link CommException} that names the leak. See {@link
     * Message} for the ownership rule.
     */
    public static final ConfigKey<Long> MAX_UNCLOSED_BYTES = ConfigKey.size(
            "max-unclosed-bytes",
            1L << 30,
            1L << 20,
            Long.MAX_VALUE,
            "most memory that received messages not yet closed may hold in one comm context");
    /**
     * The shared secret for the handshake; never printed (shown as {@code (set)}). At least {@link
     * CommOptions#MIN_SECRET_BYTES} bytes (UTF-8), checked when {@link CommOptions} are built.
     */
    public static final ConfigKey<String> AUTH_SECRET =
            ConfigKey.secret("auth.secret", "shared secret for the handshake, at least 16 bytes");
    /** A file holding the shared secret (at least 16 bytes once stripped); exclusive with {@link #AUTH_SECRET}. */
    public static final ConfigKey<String> AUTH_SECRET_FILE =
            ConfigKey.text("auth.secret-file", "file holding the shared secret");
    /**
     * Same-host {@code ucx://} comms on shared memory, with a dead peer still detected (default true).
     * With {@code peer-error-handling} on (the default), a socket {@code ucx://} comm between two processes
     * of one host (the same boot, IPC and PID namespaces and user) runs on a UCX worker that each process
     * keeps for the other alone, on UCX's shared memory (and GPU) transports, told to report peer failure
     * ({@code UCX_MM_ERROR_HANDLING=y} unless set elsewhere); other comms use the shared worker, where
     * UCX keeps same-host traffic on tcp. Why a worker per peer process: a peer killed in the middle of a
     * shared memory send can leave the receiving worker's queue blocked for good (UCX's mm transport;
     * docs/CONFIGURATION.md), which then only ends comms with that peer, which fail anyway. False keeps
     * every comm on the shared worker. Either side's false keeps a pair on the shared worker; the
     * transport must be {@code ucx://} on both sides (IP-less {@code ucx-worker://} comms always use the
     * shared worker).
     */
    public static final ConfigKey<Boolean> SAME_HOST_SHARED_MEMORY = ConfigKey.flag(
            "same-host-shared-memory",
            true,
            "ucx:// between processes of one host on shared memory, each pair on workers of its own");

    /** ucx4j-comm's keys, in documentation order. */
    public static final List<ConfigKey<?>> ALL = List.of(
            MULTI_BUFFER,
            MAX_FRAMES,
            MAX_FRAME_SIZE,
            MAX_MESSAGE_SIZE,
            MAX_IN_FLIGHT,
            MAX_IN_FLIGHT_PER_LISTENER,
            MAX_PENDING_HANDSHAKES,
            MAX_PENDING_HANDSHAKES_PER_SOURCE,
            HANDSHAKE_EVICTION_AGE,
            MAX_UNCLOSED_BYTES,
            AUTH_SECRET,
            AUTH_SECRET_FILE,
            SAME_HOST_SHARED_MEMORY);

    private CommKeys() {}
}
