package org.ucx4j.cli;

import java.time.Duration;
import org.ucx4j.Feature;
import org.ucx4j.ProgressMode;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerOptions;

/**
 * A context and one worker for a ping-pong side, made from the ucx4j configuration (its UCX context
 * options and connect timeout) and the chosen progress mode. Tag matching only, as ucx_perftest's tag
 * tests ask for.
 *
 * <p>Ownership: owns both; {@link #close()} closes the worker, then the context.
 *
 * @param context the context
 * @param worker the worker
 */
record UcxSession(UcxContext context, UcxWorker worker) implements AutoCloseable {

    static UcxSession open(String name, ProgressMode mode, UcxConfig config) {
        Ucx.configure(config);
        Ucx.ensureAvailable();
        UcxContext context = UcxContext.builder()
                .name(name)
                .features(Feature.TAG)
                .config(config)
                .build();
        try {
            Duration connectTimeout = config.connectTimeout();
            WorkerOptions.Builder options = WorkerOptions.builder().progressMode(mode).name(name);
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
