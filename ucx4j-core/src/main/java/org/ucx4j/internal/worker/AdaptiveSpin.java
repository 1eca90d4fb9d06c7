package org.ucx4j.internal.worker;

/**
 * How long a worker's threads spin before they sleep: between the configured spin and
 * {@link #MAX_FACTOR} times it, doubled when a spin caught what it waited for and halved when it ran
 * out. A ping-pong whose replies take longer than the configured spin (two JVMs on two cores) otherwise
 * never catches one and pays for two wake-ups on every message; sparse traffic shrinks it back, so a
 * worker that gets a message now and then spins no longer than configured, and an idle one not at all
 * (measured against fixed spins in docs/BENCHMARKS.md, "After the adaptive spin").
 *
 * <p>Threading: any thread. Racy updates from several threads are harmless: the budget is a hint.
 */
final class AdaptiveSpin {
    private static final int MAX_FACTOR = 16;

    private final long configuredNanos;
    private volatile long budgetNanos;

    AdaptiveSpin(long configuredNanos) {
        this.configuredNanos = configuredNanos;
        this.budgetNanos = configuredNanos;
    }

    /** The configured spin, the floor of the budget. */
    long configuredNanos() {
        return configuredNanos;
    }

    /** How long a spin lasts now. */
    long budgetNanos() {
        return budgetNanos;
    }

    /** A spin caught what it waited for: spin longer next time. */
    void caught() {
        long b = budgetNanos;
        long ceiling = configuredNanos * MAX_FACTOR;
        if (b < ceiling) {
            budgetNanos = Math.min(ceiling, b * 2);
        }
    }

    /** A spin ran out: spin shorter next time. */
    void missed() {
        long b = budgetNanos;
        if (b > configuredNanos) {
            budgetNanos = Math.max(configuredNanos, b / 2);
        }
    }

    /**
     * One step of a bounded spin: {@code sched_yield}, not a busy pause. With as many spinning threads
     * as cores (two JVMs on two cores: each has a progress thread and a waiting thread that helps), the
     * thread a reply was for sat runnable behind a busy spinner for a scheduler slice; yielding lets it
     * run, which halved small-message latency; a busy pause before yielding was slower
     * (docs/BENCHMARKS.md, "After the spins yield").
     */
    static void pause() {
        Thread.yield();
    }
}
