package org.ucx4j.comm;

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
     * The most memory that received messages not yet closed may hold in one comm context (at least 1 MiB;
     * default 1 GiB). Above it the context's comms stop receiving (the peers' data waits with them),
     * unreachable messages are given a chance to be reclaimed, and a read still waiting after the
     * comm's connect timeout fails with a {@link CommException} that names the leak. See {@link
     * Message} for the ownership rule.
     */
    public static final ConfigKey<Long> MAX_UNCLOSED_BYTES = ConfigKey.size(
            "comm.max-unclosed-bytes",
            1L << 30,
            1L << 20,
            Long.MAX_VALUE,
            "most memory that received messages not yet closed may hold in one comm context");
    /**
     * The most bytes of messages one comm receives at once, from the first byte of a message until it is
     * complete (at least 1 MiB; default 256 MiB). A single larger message (within {@link
     * #MAX_MESSAGE_SIZE}) is received alone.
     */
    public static final ConfigKey<Long> MAX_BYTES_IN_FLIGHT = ConfigKey.size(
            "comm.max-bytes-in-flight",
            256L << 20,
            1L << 20,
            Long.MAX_VALUE,
            "most bytes of messages one comm receives at once");
    /**
     * The most bytes of messages all comms accepted by one listener receive at once (at least 1 MiB;
     * default 1 GiB): what a crowd of peers can make one listener hold while their messages arrive. A
     * single larger message (within {@link #MAX_MESSAGE_SIZE}) is received alone.
     */
    public static final ConfigKey<Long> LISTENER_MAX_BYTES_IN_FLIGHT = ConfigKey.size(
            "comm.listener-max-bytes-in-flight",
            1L << 30,
            1L << 20,
            Long.MAX_VALUE,
            "most bytes of messages all comms of one listener receive at once");
    /** The shared secret for the handshake; never printed (shown as {@code (set)}). */
    public static final ConfigKey<String> AUTH_SECRET =
            ConfigKey.secret("auth.secret", "shared secret for the handshake");
    /** A file holding the shared secret; exclusive with {@link #AUTH_SECRET}. */
    public static final ConfigKey<String> AUTH_SECRET_FILE =
            ConfigKey.text("auth.secret-file", "file holding the shared secret");

    /** ucx4j-comm's keys, in documentation order. */
    public static final List<ConfigKey<?>> ALL = List.of(
            MULTI_BUFFER,
            MAX_FRAMES,
            MAX_FRAME_SIZE,
            MAX_MESSAGE_SIZE,
            MAX_UNCLOSED_BYTES,
            MAX_BYTES_IN_FLIGHT,
            LISTENER_MAX_BYTES_IN_FLIGHT,
            AUTH_SECRET,
            AUTH_SECRET_FILE);

    private CommKeys() {}
}
