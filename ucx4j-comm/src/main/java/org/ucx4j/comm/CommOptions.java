package org.ucx4j.comm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;

/**
 * Settings for {@link Comms#listen} and {@link Comms#connect}: the {@link UcxConfig} (UCX settings,
 * {@code connect-timeout}, and ucx4j-comm's own keys, {@link CommKeys}: {@code multi-buffer},
 * {@code max-frames}, {@code max-frame-size}, {@code max-message-size}, {@code auth.secret} / {@code auth.secret-file}), the allocator for received frames, and the identity
 * this side announces.
 *
 * <p>Built once and validated then: a secret file that cannot be read fails {@link Builder#build()}
 * with an error naming it. Immutable and thread-safe; one instance may serve any number of comms.
 */
public final class CommOptions {
    private final UcxConfig config;
    private final FrameAllocator allocator;
    private final String identity;
    private final Duration connectTimeout;
    private final Duration closeTimeout;
    /**
     * The fewest bytes (UTF-8) a shared secret may have: 128 bits, if they are random. Anyone who
     * connects sees an HMAC under the secret and can test guesses offline, so length is the only defence.
     */
    public static final int MIN_SECRET_BYTES = 16;

    private final byte[] secret;
    // Read per received message: resolved once here, not looked up in the configuration each time.
    private final boolean multiBuffer;
    private final int maxFrames;
    private final long maxFrameSize;
    private final long maxMessageSize;
    private final long maxInFlight;
    private final long maxInFlightPerListener;
    private final int maxPendingHandshakes;
    private final int maxPendingHandshakesPerSource;
    private final Duration handshakeEvictionAge;
    private final long maxUnclosedBytes;

    private CommOptions(Builder b) {
        this.config = b.config != null ? b.config : UcxConfig.load();
        this.allocator = b.allocator != null ? b.allocator : FrameAllocator.host();
        this.identity = b.identity != null ? b.identity : defaultIdentity();
        this.connectTimeout = b.connectTimeout != null ? b.connectTimeout : config.get(UcxKeys.CONNECT_TIMEOUT);
        this.closeTimeout = b.closeTimeout != null ? b.closeTimeout : Duration.ofSeconds(5);
        this.secret = readSecret(config);
        this.multiBuffer = Boolean.TRUE.equals(config.get(CommKeys.MULTI_BUFFER));
        this.maxFrames = config.get(CommKeys.MAX_FRAMES);
        this.maxFrameSize = config.get(CommKeys.MAX_FRAME_SIZE);
        this.maxMessageSize = config.get(CommKeys.MAX_MESSAGE_SIZE);
        this.maxInFlight = config.get(CommKeys.MAX_IN_FLIGHT);
        this.maxInFlightPerListener = config.get(CommKeys.MAX_IN_FLIGHT_PER_LISTENER);
        this.maxPendingHandshakes = config.get(CommKeys.MAX_PENDING_HANDSHAKES);
        this.maxPendingHandshakesPerSource = config.get(CommKeys.MAX_PENDING_HANDSHAKES_PER_SOURCE);
        this.handshakeEvictionAge = config.get(CommKeys.HANDSHAKE_EVICTION_AGE);
        this.maxUnclosedBytes = config.get(CommKeys.MAX_UNCLOSED_BYTES);
        if (identity.getBytes(StandardCharsets.UTF_8).length > 1024) {
            throw new IllegalArgumentException("identity is longer than 1024 bytes in UTF-8");
        }
    }

    /** A copy of {@code o} whose handshake secret is {@code secret} (already checked). */
    private CommOptions(CommOptions o, byte[] secret) {
        this.config = o.config;
        this.allocator = o.allocator;
        this.identity = o.identity;
        this.connectTimeout = o.connectTimeout;
        this.closeTimeout = o.closeTimeout;
        this.secret = secret;
        this.multiBuffer = o.multiBuffer;
        this.maxFrames = o.maxFrames;
        this.maxFrameSize = o.maxFrameSize;
        this.maxMessageSize = o.maxMessageSize;
        this.maxInFlight = o.maxInFlight;
        this.maxInFlightPerListener = o.maxInFlightPerListener;
        this.maxPendingHandshakes = o.maxPendingHandshakes;
        this.maxPendingHandshakesPerSource = o.maxPendingHandshakesPerSource;
        this.handshakeEvictionAge = o.handshakeEvictionAge;
        this.maxUnclosedBytes = o.maxUnclosedBytes;
    }

    /**
     * Options from {@link UcxConfig#load()} and the host allocator.
     *
     * @return the defaults
     */
    public static CommOptions defaults() {
        return builder().build();
    }

    /**
     * A builder starting from the defaults.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The configuration in force.
     *
     * @return the config
     */
    public UcxConfig config() {
        return config;
    }

    /**
     * Where received frames are allocated.
     *
     * @return the allocator
     */
    public FrameAllocator allocator() {
        return allocator;
    }

    /**
     * What this side announces as its identity in the handshake.
     *
     * @return the identity (default {@code hostname/pid})
     */
    public String identity() {
        return identity;
    }

    /**
     * How long connecting, handshake included, may take.
     *
     * @return the timeout (default: the config's {@code connect-timeout})
     */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /**
     * How long {@link Comm#close()} waits for the messages before it to leave.
     *
     * @return the timeout (default 5 s)
     */
    public Duration closeTimeout() {
        return closeTimeout;
    }

    /**
     * Whether messages go as one scatter-gather send ({@code multi-buffer} in the config) instead of
     * one send per frame; only {@code ucx://} distinguishes the two.
     *
     * @return the config's {@code multi-buffer}, false when unset
     */
    public boolean multiBuffer() {
        return multiBuffer;
    }

    /**
     * The most frames a received message may have.
     *
     * @return the config's {@code max-frames}
     */
    public int maxFrames() {
        return maxFrames;
    }

    /**
     * The largest frame a peer may send.
     *
     * @return the config's {@code max-frame-size} in bytes
     */
    public long maxFrameSize() {
        return maxFrameSize;
    }

    /**
     * The most bytes one message may carry, all frames together: a peer claiming more is refused, and a
     * larger message is not written.
     *
     * @return the config's {@code max-message-size} in bytes
     */
    public long maxMessageSize() {
        return maxMessageSize;
    }

    /**
     * The most bytes one comm receives ahead of its reader: see {@link CommKeys#MAX_IN_FLIGHT}.
     *
     * @return the config's {@code max-in-flight} in bytes
     */
    public long maxInFlight() {
        return maxInFlight;
    }

    /**
     * The most bytes the comms of one listener receive ahead of their readers, together: see {@link
     * CommKeys#MAX_IN_FLIGHT_PER_LISTENER}.
     *
     * @return the config's {@code max-in-flight-per-listener} in bytes
     */
    public long maxInFlightPerListener() {
        return maxInFlightPerListener;
    }

    /**
     * The most handshakes one {@code ucx://} or {@code tcp://} listener runs at a time.
     *
     * @return the config's {@code max-pending-handshakes}
     */
    public int maxPendingHandshakes() {
        return maxPendingHandshakes;
    }

    /**
     * The most of {@link #maxPendingHandshakes()} one source address may hold at a listener.
     *
     * @return the config's {@code max-pending-handshakes-per-source}
     */
    public int maxPendingHandshakesPerSource() {
        return maxPendingHandshakesPerSource;
    }

    /**
     * How old a listener's oldest handshake must be to give its slot to a newcomer when all are taken (or
     * its source's oldest, when the newcomer's source holds its share): see
     * {@link CommKeys#HANDSHAKE_EVICTION_AGE}.
     *
     * @return the config's {@code handshake-eviction-age}; zero: never
     */
    public Duration handshakeEvictionAge() {
        return handshakeEvictionAge;
    }

    /**
     * The most memory received messages not yet closed may hold in the comm's context before its comms
     * stop receiving: see {@link CommKeys#MAX_UNCLOSED_BYTES}.
     *
     * @return the config's {@code max-unclosed-bytes}
     */
    public long maxUnclosedBytes() {
        return maxUnclosedBytes;
    }

    /**
     * The shared secret for the handshake, from {@code auth.secret} or the file {@code auth.secret-file}.
     *
     * @return a copy of the secret's bytes, empty when none is configured
     */
    public Optional<byte[]> secret() {
        return secret == null ? Optional.empty() : Optional.of(secret.clone());
    }

    /**
     * These options with another shared secret for the handshake, in place of the configured one (if any):
     * for code that holds a secret of its own, such as a cluster's mesh, which derives one from its
     * launch's token. Everything else is kept.
     *
     * <p>Threading: any thread; this instance is not changed. Ownership: the bytes are copied; the caller
     * may clear its array afterwards.
     *
     * @param secret at least {@link #MIN_SECRET_BYTES} bytes, random ones
     * @return new options
     * @throws IllegalArgumentException when the secret is shorter than {@link #MIN_SECRET_BYTES}
     */
    public CommOptions withSecret(byte[] secret) {
        return new CommOptions(
                this, longEnough(Objects.requireNonNull(secret, "secret").clone(), "the secret given"));
    }

    private static byte[] readSecret(UcxConfig config) {
        Optional<String> inline = config.find(CommKeys.AUTH_SECRET);
        Optional<String> file = config.find(CommKeys.AUTH_SECRET_FILE);
        if (inline.isPresent() && file.isPresent()) {
            throw new IllegalArgumentException("both auth.secret and auth.secret-file are set: keep one");
        }
        if (inline.isPresent()) {
            if (inline.get().isEmpty()) {
                throw new IllegalArgumentException("auth.secret is empty");
            }
            return longEnough(inline.get().getBytes(StandardCharsets.UTF_8), "auth.secret");
        }
        if (file.isPresent()) {
            Path p = Path.of(file.get());
            String s;
            try {
                s = Files.readString(p, StandardCharsets.UTF_8).strip();
            } catch (IOException e) {
                throw new IllegalArgumentException("auth.secret-file " + p + " cannot be read: " + e, e);
            }
            if (s.isEmpty()) {
                throw new IllegalArgumentException("auth.secret-file " + p + " is empty");
            }
            return longEnough(s.getBytes(StandardCharsets.UTF_8), "auth.secret-file " + p);
        }
        return null;
    }

    /**
     * The listener proves the secret to anyone who connects, so an eavesdropper or a connector can test
     * guesses offline against one handshake: a short secret is refused. Says how long it is, never what.
     */
    private static byte[] longEnough(byte[] secret, String where) {
        if (secret.length < MIN_SECRET_BYTES) {
            int length = secret.length;
            java.util.Arrays.fill(secret, (byte) 0);
            throw new IllegalArgumentException(where + " is too short: " + length + " bytes, and a shared secret must"
                    + " be at least " + MIN_SECRET_BYTES + " bytes (UTF-8) so that it cannot be guessed offline;"
                    + " use random bytes, for example the output of 'openssl rand -base64 24'");
        }
        return secret;
    }

    private static String defaultIdentity() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "localhost";
        }
        return host + "/" + ProcessHandle.current().pid();
    }

    @Override
    public String toString() {
        return "CommOptions[identity=" + identity + ", connectTimeout=" + connectTimeout + ", multiBuffer="
                + multiBuffer() + ", maxFrames=" + maxFrames() + ", maxFrameSize=" + maxFrameSize()
                + ", maxMessageSize=" + maxMessageSize()
                + ", auth=" + (secret != null) + ", allocator=" + allocator + "]";
    }

    /** Builds {@link CommOptions}; not thread-safe. */
    public static final class Builder {
        private UcxConfig config;
        private FrameAllocator allocator;
        private String identity;
        private Duration connectTimeout;
        private Duration closeTimeout;

        private Builder() {}

        /**
         * The configuration (default {@link UcxConfig#load()}).
         *
         * @param value the config
         * @return this builder
         */
        public Builder config(UcxConfig value) {
            this.config = Objects.requireNonNull(value, "config");
            return this;
        }

        /**
         * The allocator for received frames (default {@link FrameAllocator#host()}).
         *
         * @param value the allocator
         * @return this builder
         */
        public Builder allocator(FrameAllocator value) {
            this.allocator = Objects.requireNonNull(value, "allocator");
            return this;
        }

        /**
         * The identity announced to peers (default {@code hostname/pid}); at most 1024 bytes.
         *
         * @param value the identity
         * @return this builder
         */
        public Builder identity(String value) {
            this.identity = Objects.requireNonNull(value, "identity");
            return this;
        }

        /**
         * Overrides the config's {@code connect-timeout}.
         *
         * @param value a positive duration
         * @return this builder
         */
        public Builder connectTimeout(Duration value) {
            this.connectTimeout = positive(value, "connectTimeout");
            return this;
        }

        /**
         * How long a graceful close waits (default 5 s).
         *
         * @param value a positive duration
         * @return this builder
         */
        public Builder closeTimeout(Duration value) {
            this.closeTimeout = positive(value, "closeTimeout");
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the options
         * @throws IllegalArgumentException naming what is wrong (an unreadable secret file, ...)
         */
        public CommOptions build() {
            return new CommOptions(this);
        }

        private static Duration positive(Duration d, String what) {
            Objects.requireNonNull(d, what);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(what + " must be positive, got " + d);
            }
            return d;
        }
    }
}
