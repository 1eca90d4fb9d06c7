package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.Extensions;
import org.ucx4j.internal.Libc;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.UcxLibrary;

/**
 * A UCP context ({@code ucp_context_h}): the features asked for and the UCX configuration, shared by the
 * workers created from it.
 *
 * <p>Ownership: the context owns its workers; {@link #close()} closes them (in reverse creation order)
 * and then the context. Closing twice is harmless; using a closed context is an
 * {@link IllegalStateException}.
 *
 * <p>Threading: safe from any thread. Creating workers is serialized inside.
 *
 * <p>Why options here: UCX reads most settings ({@code TLS}, {@code NET_DEVICES}, thresholds) per
 * context through {@code ucp_config_modify}, so two contexts in one JVM can differ. Process-wide options
 * (those libucs reads when it loads) are environment variables, set before loading.
 */
public final class UcxContext implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxContext.class);
    private static final long PARAM_FIELD_FEATURES = 1L;
    private static final long PARAM_FIELD_NAME = 1L << 8;
    private static final int CONFIG_PRINT_CONFIG = 1;
    private static final int API_MAJOR = 1;
    private static final int API_MINOR = 13;

    private final MemorySegment handle;
    private final MemorySegment ucpConfig;
    private final Set<Feature> features;
    private final Map<String, String> options;
    private final String name;
    private final UcxConfig config;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Numbers this context's workers (their names and progress threads): no process-wide counter. */
    private final AtomicInteger workerNumbers = new AtomicInteger();

    private final List<UcxWorker> workers = new ArrayList<>();
    /** Workers closed without {@code ucp_worker_destroy} (guarded by {@link #workers}): no {@code ucp_cleanup}. */
    private int workersLeftUndestroyed;

    private UcxContext(MemorySegment handle, MemorySegment ucpConfig, Builder b) {
        this.handle = handle;
        this.ucpConfig = ucpConfig;
        this.features = Collections.unmodifiableSet(EnumSet.copyOf(b.features));
        this.options = Collections.unmodifiableMap(new LinkedHashMap<>(b.options));
        this.name = b.name;
        this.config = b.config;
    }

    /**
     * A context with the default features (tag, stream, active messages, RMA, wake-up) and the ucx4j
     * configuration from its usual sources ({@link UcxConfig#load()}: system properties, {@code UCX4J__*}
     * and Dask variables, {@code ucx4j.yaml}); with nothing configured, UCX's own defaults and its
     * {@code UCX_*} environment variables apply.
     *
     * @return a new context, owned by the caller
     * @throws UnsatisfiedLinkError when UCX is unavailable
     * @throws UcxException when UCX fails to initialise
     */
    public static UcxContext create() {
        return builder().build();
    }

    /**
     * Starts building a context.
     *
     * @return a builder, not thread-safe, used once
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Creates a worker with the options the configuration gives ({@code progress-mode},
     * {@code connect-timeout}; by default {@link ProgressMode#THREAD_BLOCKING} and 5 s).
     *
     * @return a new worker, owned by this context (closed with it) and by the caller
     */
    public UcxWorker newWorker() {
        return newWorker(WorkerOptions.from(config));
    }

    /**
     * The ucx4j configuration this context was built from (transport switches, timeouts, progress mode).
     *
     * @return the configuration
     */
    public UcxConfig config() {
        return config;
    }

    /**
     * Creates a worker.
     *
     * @param options progress mode, timeouts, name
     * @return a new worker, owned by this context (closed with it) and by the caller
     * @throws UcxException when UCX cannot create it
     */
    public UcxWorker newWorker(WorkerOptions options) {
        Objects.requireNonNull(options, "options");
        synchronized (workers) {
            ensureOpen();
            UcxWorker worker = new UcxWorker(this, options, workerNumbers.incrementAndGet());
            workers.add(worker);
            return worker;
        }
    }

    /** How many of this context's workers were closed without {@code ucp_worker_destroy}; any thread. */
    int workersLeftUndestroyed() {
        synchronized (workers) {
            return workersLeftUndestroyed;
        }
    }

    /**
     * A worker closed; {@code destroyed} is false when its UCX worker was left undestroyed
     * ({@code NativeWorker.destroy}), which keeps this context's UCX context from being cleaned up.
     */
    void workerClosed(UcxWorker worker, boolean destroyed) {
        synchronized (workers) {
            workers.remove(worker);
            if (!destroyed) {
                workersLeftUndestroyed++;
            }
        }
    }

    MemorySegment handle() {
        ensureOpen();
        return handle;
    }

    /**
     * The features this context was created with.
     *
     * @return an unmodifiable set
     */
    public Set<Feature> features() {
        return features;
    }

    /**
     * The UCX options applied through {@code ucp_config_modify} (names without the {@code UCX_} prefix).
     *
     * @return an unmodifiable, ordered map
     */
    public Map<String, String> options() {
        return options;
    }

    /**
     * The context's name (shown in UCX logs).
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * UCX's description of this context: the transports and devices it uses ({@code ucp_context_print_info}).
     *
     * @return multi-line text
     */
    public String describe() {
        MemorySegment h = handle();
        return Libc.capture(file -> NativeCalls.invoke(() -> {
            Ucp.contextPrintInfo(h, file);
        }));
    }

    /**
     * The effective UCX configuration of this context ({@code ucp_config_print}), one {@code UCX_NAME=value}
     * per line.
     *
     * @return multi-line text
     */
    public String describeConfig() {
        ensureOpen();
        return Libc.capture(file -> NativeCalls.invoke(() -> {
            Ucp.configPrint(ucpConfig, file, MemorySegment.NULL, CONFIG_PRINT_CONFIG);
        }));
    }

    /**
     * The transports UCX selected for this context, parsed from {@link #describe()}.
     *
     * @return transport names such as {@code tcp}, {@code posix}, {@code cma}, in order, without duplicates
     */
    public List<String> transports() {
        List<String> out = new ArrayList<>();
        for (String resource : resources()) {
            String tl = resource.substring(0, resource.indexOf('/'));
            if (!out.contains(tl)) {
                out.add(tl);
            }
        }
        return out;
    }

    /**
     * The transport resources UCX uses for this context, as {@code transport/device}, parsed from
     * {@link #describe()} (lines such as {@code #  resource 1 : md 1 dev 1 flags -- tcp/lo}).
     *
     * @return for example {@code [self/memory0, tcp/lo, posix/memory, cma/memory]}
     */
    public List<String> resources() {
        List<String> out = new ArrayList<>();
        for (String line : describe().split("\n")) {
            String trimmed = line.trim();
            int dashes = trimmed.lastIndexOf("-- ");
            if (trimmed.startsWith("#") && trimmed.contains("resource") && dashes > 0) {
                String resource = trimmed.substring(dashes + 3).trim().toLowerCase(Locale.ROOT);
                if (resource.indexOf('/') > 0 && !out.contains(resource)) {
                    out.add(resource);
                }
            }
        }
        return out;
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("UCX context '" + name + "' is closed");
        }
    }

    /**
     * Closes every worker (reverse creation order), then the context. Idempotent. Failures of individual
     * workers are collected: the first is thrown with the others suppressed, after everything was closed.
     * If a worker had to be left undestroyed (a receive stuck in a stalled peer's rendezvous: see
     * {@link UcxWorker#close()}), the UCX context is not cleaned up either (a warning says so) and stays
     * allocated until the process exits; the memory regions are unmapped all the same.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<UcxWorker> toClose;
        synchronized (workers) {
            toClose = new ArrayList<>(workers);
        }
        Collections.reverse(toClose);
        RuntimeException failure = null;
        for (UcxWorker w : toClose) {
            try {
                w.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        failure = closeRegions(failure);
        int undestroyed;
        synchronized (workers) {
            undestroyed = workersLeftUndestroyed;
        }
        if (undestroyed == 0) {
            NativeCalls.invoke(() -> {
                Ucp.cleanup(handle);
            });
        } else {
            // ucp_cleanup frees what a live UCX worker still points to.
            LOG.warn(
                    "UCX context '{}' closed but not cleaned up: {} of its workers were left undestroyed"
                            + " (see UcxWorker.close); it stays allocated until the process exits",
                    name,
                    undestroyed);
        }
        NativeCalls.invoke(() -> {
            Ucp.configRelease(ucpConfig);
        });
        if (failure != null) {
            throw failure;
        }
    }

    // ---------------------------------------------------------------- RMA: memory regions

    /** Open memory regions; also the lock that serializes {@code ucp_mem_map/unmap}, {@code ucp_rkey_pack}. */
    private final List<MemoryRegion> regions = new ArrayList<>();
    /** Set (under the lock) once close has unmapped every region: no UCX call on this context after it. */
    private boolean regionsClosed;

    /**
     * Registers existing native memory for remote access ({@code ucp_mem_map} of its address and length).
     * The memory stays the caller's: keep it alive until the region is closed.
     *
     * @param segment native, writable, non-empty memory
     * @return the region, owned by this context (closed with it) and by the caller
     * @throws IllegalArgumentException for heap, read-only or empty segments
     * @throws UcxException when UCX cannot map it
     */
    public MemoryRegion mapMemory(MemorySegment segment) {
        synchronized (regions) {
            ensureOpen();
            MemoryRegion region = MemoryRegion.map(this, handle, segment);
            regions.add(region);
            return region;
        }
    }

    /**
     * Lets UCX allocate and register {@code size} bytes of host memory ({@code ucp_mem_map} with
     * {@code UCP_MEM_MAP_ALLOCATE}); UCX frees it when the region closes. UCX may round the size up
     * (to a page, or to its allocator's granularity): the region's {@link MemoryRegion#size()} and
     * segment are what UCX really allocated, at least {@code size} bytes; slice the segment to the size
     * you asked for when the exact length matters (for example, to compare contents).
     *
     * @param size bytes, positive
     * @return the region, owned by this context (closed with it) and by the caller
     * @throws UcxException when UCX cannot allocate or register it
     */
    public MemoryRegion allocateMemory(long size) {
        synchronized (regions) {
            ensureOpen();
            MemoryRegion region = MemoryRegion.allocate(this, handle, size);
            regions.add(region);
            return region;
        }
    }

    /** Runs a region operation with the region lock held and the context still initialised. */
    <T> T withRegionLock(java.util.function.Function<MemorySegment, T> body) {
        synchronized (regions) {
            if (regionsClosed) {
                throw new IllegalStateException("UCX context '" + name + "' is closed");
            }
            return body.apply(handle);
        }
    }

    /** Lock held. */
    void regionClosed(MemoryRegion region) {
        regions.remove(region);
    }

    /** Closes every region (newest first) before {@code ucp_cleanup}; collects failures like close does. */
    private RuntimeException closeRegions(RuntimeException failure) {
        List<MemoryRegion> open;
        synchronized (regions) {
            open = new ArrayList<>(regions);
        }
        Collections.reverse(open);
        for (MemoryRegion region : open) {
            try {
                region.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        synchronized (regions) {
            regionsClosed = true;
        }
        return failure;
    }

    @Override
    public String toString() {
        return "UcxContext[" + name + ", features=" + features + (closed.get() ? ", closed" : "") + "]";
    }

    static void check(int status, String call, String detail) {
        if (status != UcxStatus.OK.code()) {
            throw UcxException.of(call, status, detail);
        }
    }

    /**
     * Builds a {@link UcxContext}. Not thread-safe; validated in {@link #build()}.
     */
    public static final class Builder {
        private final EnumSet<Feature> features =
                EnumSet.of(Feature.TAG, Feature.STREAM, Feature.AM, Feature.RMA, Feature.WAKEUP);
        private final Map<String, String> options = new LinkedHashMap<>();
        private String name = "ucx4j";
        private UcxConfig config;

        private Builder() {}

        /**
         * Uses a ucx4j configuration: its UCX settings ({@code TLS}, {@code SOCKADDR_TLS_PRIORITY},
         * {@code NET_DEVICES}, {@code environment} entries) are applied to this context before any
         * {@link #option} set here, which win; its global options are set in the process environment
         * before UCX loads. Without this call, {@link UcxConfig#load()} is used.
         *
         * @param ucxConfig the configuration
         * @return this builder
         */
        public Builder config(UcxConfig ucxConfig) {
            this.config = Objects.requireNonNull(ucxConfig, "config");
            return this;
        }

        /**
         * Replaces the requested features. {@link Feature#WAKEUP} is always added: blocking waits need it.
         *
         * @param first a feature
         * @param rest more features
         * @return this builder
         */
        public Builder features(Feature first, Feature... rest) {
            features.clear();
            features.add(first);
            Collections.addAll(features, rest);
            features.add(Feature.WAKEUP);
            return this;
        }

        /**
         * Sets a UCX configuration option for this context, as {@code ucp_config_modify} takes it.
         *
         * @param key the option without or with the {@code UCX_} prefix, e.g. {@code TLS} or {@code UCX_TLS}
         * @param value the value, e.g. {@code tcp,self}
         * @return this builder
         */
        public Builder option(String key, String value) {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(value, "value");
            String k = key.trim();
            if (k.regionMatches(true, 0, "UCX_", 0, 4)) {
                k = k.substring(4);
            }
            if (k.isEmpty()) {
                throw new IllegalArgumentException("empty UCX option name");
            }
            options.put(k.toUpperCase(Locale.ROOT), value);
            return this;
        }

        /**
         * Sets several UCX options (see {@link #option(String, String)}).
         *
         * @param values option name to value, applied in iteration order
         * @return this builder
         */
        public Builder options(Map<String, String> values) {
            values.forEach(this::option);
            return this;
        }

        /**
         * Names the context (UCX logs show it).
         *
         * @param contextName the name
         * @return this builder
         */
        public Builder name(String contextName) {
            this.name = Objects.requireNonNull(contextName, "name");
            return this;
        }

        /**
         * Creates the context. On failure nothing native is left behind.
         *
         * @return the context, owned by the caller
         * @throws UnsatisfiedLinkError when UCX is unavailable
         * @throws UcxException when an option is rejected (naming it) or UCX fails to initialise
         */
        public UcxContext build() {
            if (config == null) {
                config = UcxConfig.load();
            }
            UcxConfig.UcxSettings settings = config.ucxSettings();
            prepareGlobals(config);
            UcxLibrary.require();
            Map<String, String> effective = new LinkedHashMap<>(settings.contextOptions());
            effective.putAll(options);
            // Defaults of extensions (ucx4j-cuda's CUDA settings) where nobody set the option.
            Map<String, String> defaults = new LinkedHashMap<>();
            Extensions.beforeContextInit(config).forEach((k, v) -> {
                if (!effective.containsKey(k) && System.getenv("UCX_" + k) == null) {
                    defaults.put(k, v);
                }
            });
            options.clear();
            options.putAll(effective);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ADDRESS);
                int status = NativeCalls.callInt(() -> Ucp.configRead(MemorySegment.NULL, MemorySegment.NULL, out));
                check(status, "ucp_config_read", null);
                MemorySegment config = out.get(ADDRESS, 0);
                try {
                    for (Map.Entry<String, String> e : options.entrySet()) {
                        MemorySegment k = arena.allocateFrom(e.getKey());
                        MemorySegment v = arena.allocateFrom(e.getValue());
                        int s = NativeCalls.callInt(() -> Ucp.configModify(config, k, v));
                        check(s, "ucp_config_modify", "UCX option UCX_" + e.getKey() + "='" + e.getValue() + "'");
                    }
                    for (Map.Entry<String, String> e : defaults.entrySet()) {
                        MemorySegment k = arena.allocateFrom(e.getKey());
                        MemorySegment v = arena.allocateFrom(e.getValue());
                        if (NativeCalls.callInt(() -> Ucp.configModify(config, k, v)) == UcxStatus.OK.code()) {
                            options.put(e.getKey(), e.getValue()); // an option older UCX lacks is skipped
                        }
                    }
                    MemorySegment params = arena.allocate(Structs.UCP_PARAMS);
                    long features = 0;
                    for (Feature f : this.features) {
                        features |= f.bit();
                    }
                    params.set(
                            JAVA_LONG,
                            Structs.offset(Structs.UCP_PARAMS, "field_mask"),
                            PARAM_FIELD_FEATURES | PARAM_FIELD_NAME);
                    params.set(JAVA_LONG, Structs.offset(Structs.UCP_PARAMS, "features"), features);
                    params.set(ADDRESS, Structs.offset(Structs.UCP_PARAMS, "name"), arena.allocateFrom(name));
                    int s = NativeCalls.callInt(() -> Ucp.initVersion(API_MAJOR, API_MINOR, params, config, out));
                    check(s, "ucp_init", "features " + this.features + ", options " + options);
                    return new UcxContext(out.get(ADDRESS, 0), config, this);
                } catch (RuntimeException | Error e) {
                    NativeCalls.invoke(() -> {
                        Ucp.configRelease(config);
                    });
                    throw e;
                }
            }
        }
    }

    /**
     * Requests a configuration's global options before UCX loads (once loaded, they are fixed), then
     * checks that the loaded UCX has them.
     */
    static void prepareGlobals(UcxConfig config) {
        synchronized (UcxLibrary.class) {
            if (!UcxLibrary.loadStarted()) {
                config.ucxSettings().globalOptions().forEach(UcxLibrary::requestGlobalOption);
            }
        }
        UcxLibrary lib = UcxLibrary.state().library();
        if (lib != null) {
            config.checkGlobalsApplicable(true, appliedGlobals(lib));
        }
    }

    /** The global options UCX was loaded with (names without {@code UCX_}), as the config check wants them. */
    private static Map<String, String> appliedGlobals(UcxLibrary lib) {
        Map<String, String> out = new LinkedHashMap<>();
        lib.environment().forEach((k, v) -> out.put(k.startsWith("UCX_") ? k.substring(4) : k, v));
        return out;
    }
}
