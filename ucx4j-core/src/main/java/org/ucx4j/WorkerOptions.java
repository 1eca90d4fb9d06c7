package org.ucx4j;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link UcxWorker} runs: its progress mode, timeouts and name. Immutable; build with
 * {@link #builder()}.
 *
 * <p>Threading: immutable, safe to share.
 *
 * @param progressMode who drives progress, see {@link ProgressMode}
 * @param connectTimeout how long {@link UcxWorker#connect} waits for the connection before failing
 * @param closeTimeout how long a graceful close waits for in-flight data before giving up
 * @param spin how long a {@link ProgressMode#THREAD_BLOCKING} thread keeps polling after activity before it
 *     sleeps, at least (short spins save a wake-up on ping-pong traffic and cost nothing when idle); the
 *     worker lengthens it up to 16 times while spins keep catching replies and shortens it back when
 *     they run out (zero turns spinning off, and with it the polling a thread-blocking worker does while
 *     a bulk operation is in flight: see {@link ProgressMode#THREAD_BLOCKING})
 * @param name the progress thread's name
 * @param peerErrorHandling whether endpoints detect a failed peer ({@code UCP_ERR_HANDLING_MODE_PEER}, the
 *     default): then a dead peer fails every pending operation. UCX (1.13 and 1.22 alike) only uses
 *     transports that can detect peer failure for such endpoints, which leaves out shared memory
 *     between processes on one host (tcp carries the traffic instead). Turning it off lets UCX use
 *     shared memory, at a price: a peer that dies is not detected, and operations on it may never
 *     complete. Off is for benchmarks and for jobs that are torn down as a whole.
 */
public record WorkerOptions(
        ProgressMode progressMode,
        Duration connectTimeout,
        Duration closeTimeout,
        Duration spin,
        String name,
        boolean peerErrorHandling) {
    /** The default {@link #spin()}: 50 µs (the config key {@code progress-spin}). */
    public static final Duration DEFAULT_SPIN = Duration.ofNanos(50_000);

    /** Validates. */
    public WorkerOptions {
        Objects.requireNonNull(progressMode, "progressMode");
        requirePositive(connectTimeout, "connectTimeout");
        requirePositive(closeTimeout, "closeTimeout");
        Objects.requireNonNull(spin, "spin");
        if (spin.isNegative()) {
            throw new IllegalArgumentException("spin must not be negative: " + spin);
        }
        Objects.requireNonNull(name, "name");
    }

    private static void requirePositive(Duration d, String what) {
        Objects.requireNonNull(d, what);
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(what + " must be positive: " + d);
        }
    }

    /**
     * The defaults: thread-blocking progress, 5 s connect and close timeouts, 50 µs spin.
     *
     * @return default options
     */
    public static WorkerOptions defaults() {
        return builder().build();
    }

    /**
     * The options a configuration gives: its {@code progress-mode}, {@code connect-timeout},
     * {@code progress-spin} and {@code peer-error-handling}, other
     * values as in {@link #defaults()}.
     *
     * @param config the configuration
     * @return the options
     */
    public static WorkerOptions from(UcxConfig config) {
        return builder()
                .progressMode(config.get(UcxKeys.PROGRESS_MODE))
                .connectTimeout(config.get(UcxKeys.CONNECT_TIMEOUT))
                .spin(config.get(UcxKeys.PROGRESS_SPIN))
                .peerErrorHandling(config.get(UcxKeys.PEER_ERROR_HANDLING))
                .build();
    }

    /**
     * Starts from the defaults.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link WorkerOptions}. Not thread-safe. */
    public static final class Builder {
        private ProgressMode progressMode = ProgressMode.THREAD_BLOCKING;
        private Duration connectTimeout = Duration.ofSeconds(5);
        private Duration closeTimeout = Duration.ofSeconds(5);
        private Duration spin = DEFAULT_SPIN;
        private String name = "ucx4j-worker";
        private boolean peerErrorHandling = true;

        private Builder() {}

        /**
         * Turns peer failure detection on (the default) or off; see {@link WorkerOptions#peerErrorHandling()}.
         *
         * @param enabled false to let UCX use transports that cannot detect a dead peer (shared memory)
         * @return this builder
         */
        public Builder peerErrorHandling(boolean enabled) {
            this.peerErrorHandling = enabled;
            return this;
        }

        /**
         * Sets the progress mode.
         *
         * @param mode the mode
         * @return this builder
         */
        public Builder progressMode(ProgressMode mode) {
            this.progressMode = mode;
            return this;
        }

        /**
         * Sets the connect timeout.
         *
         * @param timeout positive
         * @return this builder
         */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = timeout;
            return this;
        }

        /**
         * Sets the graceful close timeout.
         *
         * @param timeout positive
         * @return this builder
         */
        public Builder closeTimeout(Duration timeout) {
            this.closeTimeout = timeout;
            return this;
        }

        /**
         * Sets how long a blocking-mode thread spins before sleeping, at least (the worker adapts it up
         * to 16 times this while spins catch replies; zero: no spin, and no polling while bulk operations are in
         * flight either).
         *
         * @param duration zero or more
         * @return this builder
         */
        public Builder spin(Duration duration) {
            this.spin = duration;
            return this;
        }

        /**
         * Sets the name (progress thread name, logs).
         *
         * @param workerName the name
         * @return this builder
         */
        public Builder name(String workerName) {
            this.name = workerName;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @return the options
         */
        public WorkerOptions build() {
            return new WorkerOptions(progressMode, connectTimeout, closeTimeout, spin, name, peerErrorHandling);
        }
    }
}
