package org.ucx4j.cli;

import java.time.Duration;
import java.util.Set;
import org.ucx4j.Feature;
import org.ucx4j.ProgressMode;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxKeys;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerOptions;

/**
 * A context and one worker for a benchmark side, made from the ucx4j configuration (its UCX context
 * options and connect timeout) and the chosen progress mode, with only the features the benchmark uses
 * (as ucx_perftest asks only for its test's feature).
 *
 * <p>Ownership: owns both; {@link #close()} closes the worker, then the context.
 *
 * @param context the context
 * @param worker the worker
 */
record UcxSession(UcxContext context, UcxWorker worker) implements AutoCloseable {

    /**
     * Opens a context and a worker.
     *
     * @param name the context and worker name
     * @param mode the progress mode
     * @param config the ucx4j configuration
     * @param features the UCX features (WAKEUP is always added)
     * @return the session, to close
     */
    static UcxSession open(String name, ProgressMode mode, UcxConfig config, Set<Feature> features) {
        Ucx.configure(config);
        Ucx.ensureAvailable();
        UcxContext context = UcxContext.builder()
                .name(name)
                .features(Feature.TAG, features.toArray(Feature[]::new))
                .config(config)
                .build();
        try {
            Duration connectTimeout = config.get(UcxKeys.CONNECT_TIMEOUT);
            WorkerOptions.Builder options = WorkerOptions.builder()
                    .progressMode(mode)
                    .name(name)
                    .peerErrorHandling(config.get(UcxKeys.PEER_ERROR_HANDLING));
            if (connectTimeout.isPositive()) {
                options.connectTimeout(connectTimeout);
            }
            return new UcxSession(context, context.newWorker(options.build()));
        } catch (RuntimeException | Error e) {
            context.close();
            throw e;
        }
    }

    @Override
    public void close() {
        try {
            worker.close();
        } finally {
            context.close();
        }
    }
}
