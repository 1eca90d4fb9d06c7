package org.ucx4j.internal.worker;

import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One-shot timers of a worker (connect and close timeouts), run by the holder of its progress lock at
 * the start of each progress round.
 *
 * <p>Threading: lock holder only.
 */
public final class TimerQueue {
    private static final Logger LOG = LoggerFactory.getLogger(TimerQueue.class);

    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    private long seq;

    /** A scheduled action; {@link #cancel()} keeps it from running. */
    public static final class Timer implements Comparable<Timer> {
        final long deadline;
        final long seq;
        final Runnable action;
        boolean cancelled;

        Timer(long deadline, long seq, Runnable action) {
            this.deadline = deadline;
            this.seq = seq;
            this.action = action;
        }

        /** Keeps the action from running. Lock holder only. */
        public void cancel() {
            cancelled = true;
        }

        @Override
        public int compareTo(Timer o) {
            int c = Long.compare(deadline, o.deadline);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /**
     * Schedules {@code action} after {@code delayNanos}.
     *
     * @return the timer, to cancel
     */
    public Timer schedule(long delayNanos, Runnable action) {
        Timer t = new Timer(System.nanoTime() + delayNanos, seq++, action);
        timers.add(t);
        return t;
    }

    /** Runs the timers that are due; returns how many ran. */
    int runDue() {
        if (timers.isEmpty()) {
            return 0;
        }
        long now = System.nanoTime();
        int n = 0;
        Timer t;
        while ((t = timers.peek()) != null && t.deadline - now <= 0) {
            timers.poll();
            if (!t.cancelled) {
                n++;
                try {
                    t.action.run();
                } catch (Throwable e) {
                    LOG.error("ucx4j timer failed", e);
                }
            }
        }
        return n;
    }

    /** Milliseconds until the next timer is due, at most {@code ceiling}. */
    int millisUntilNext(int ceiling) {
        Timer t = timers.peek();
        if (t == null) {
            return ceiling;
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(t.deadline - System.nanoTime()) + 1;
        return (int) Math.max(0, Math.min(ms, ceiling));
    }
}
