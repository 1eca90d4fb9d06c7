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
     * On how many of its steps a spin yields the core ({@code sched_yield}); the other steps are a busy
     * pause ({@link Thread#onSpinWait()}). With few cores (two JVMs on two cores run four spinners) the
     * thread a reply was for sat runnable behind a busy spinner for a scheduler slice, and yielding on
     * every step halved small-message latency (docs/BENCHMARKS.md, "After the spins yield"). With cores
     * to spare a yield is only a system call (0.3-1 usec) during which a reply that lands is seen late: a
     * spin there pauses, and yields now and then so an oversubscribed machine still gets its turn: every
     * 1024th step, tens of microseconds of spinning apart (every 64th cost a measurable share of a
     * caller-mode ping-pong in yields: docs/BENCHMARKS.md, "Where a small message's time goes").
     */
    static final int YIELD_EVERY = Runtime.getRuntime().availableProcessors() >= 8 ? 1024 : 1;

    /**
     * Whether step {@code step} of a spin is one that yields the core ({@link #pause}).
     *
     * @param step as for {@link #pause}
     * @return true on every {@link #YIELD_EVERY}th step
     */
    static boolean yields(int step) {
        return step % YIELD_EVERY == 0;
    }

    /**
     * One step of a bounded spin: a busy pause, or on every {@link #YIELD_EVERY}th step a yield.
     *
     * @param step how many steps this spin has taken so far (any counter that moves by one per step)
     */
    static void pause(int step) {
        if (yields(step)) {
            Thread.yield();
        } else {
            Thread.onSpinWait();
        }
    }
}
