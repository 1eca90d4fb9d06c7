package org.ucx4j.comm.internal;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.helpers.MessageFormatter;

/**
 * A listener's refusal log, rate-limited: a flood of bad handshakes must not become a flood of log
 * lines (disk, and the log's reader, are resources too). The first {@link #PER_WINDOW} refusals of each
 * {@link #WINDOW} are logged one by one at WARN; the rest are only counted, by kind, and one summary
 * line says how many there were once the window is over.
 *
 * <p>Threading: safe from any thread (the listener's accept loop, its handshake threads, UCX's progress
 * thread). The summary is written by a timer of {@link CommTimers}, so it comes even when the flood
 * stops. Public for the cluster rendezvous ({@code org.ucx4j.cluster}); this package is not exported.
 */
public final class RefusalLog {
    /** The length of one window. */
    static final Duration WINDOW = Duration.ofSeconds(10);
    /** Refusals logged one by one per window. */
    static final int PER_WINDOW = 5;

    private final String where;
    private final Consumer<String> sink;
    private final LongSupplier nanoClock;
    private final long windowNanos;
    private final int perWindow;

    private long windowStart;
    private int loggedInWindow;
    /** Refusals of the current window not logged one by one, per kind, in the order first seen. */
    private final Map<String, Long> suppressed = new LinkedHashMap<>();

    private boolean summaryScheduled;

    /**
     * A log of the default window and quota.
     *
     * @param log where the lines go (at WARN)
     * @param where what refuses, as the lines start ({@code ucx://10.0.0.1:13337})
     */
    public RefusalLog(Logger log, String where) {
        this(log::warn, where);
    }

    /**
     * A log of the default window and quota, into any sink.
     *
     * @param sink where the lines go
     * @param where what refuses, as the lines start
     */
    public RefusalLog(Consumer<String> sink, String where) {
        this(sink, where, WINDOW, PER_WINDOW, System::nanoTime);
    }

    /** For tests: any sink, window and clock. */
    RefusalLog(Consumer<String> sink, String where, Duration window, int perWindow, LongSupplier nanoClock) {
        this.sink = sink;
        this.where = where;
        this.windowNanos = window.toNanos();
        this.perWindow = perWindow;
        this.nanoClock = nanoClock;
        this.windowStart = nanoClock.getAsLong();
    }

    /**
     * Logs one refusal, or counts it when this window's quota is used up.
     *
     * @param kind what kind of refusal, as the summary counts it ({@code handshake failed})
     * @param format an SLF4J format for the line after {@code where}: {@code "refused {}: {}"}
     * @param args the format's arguments
     */
    public void refused(String kind, String format, Object... args) {
        String summary;
        boolean logIt;
        boolean schedule = false;
        synchronized (this) {
            summary = rollOver();
            logIt = loggedInWindow < perWindow;
            if (logIt) {
                loggedInWindow++;
            } else {
                suppressed.merge(kind, 1L, Long::sum);
                if (!summaryScheduled) {
                    summaryScheduled = schedule = true;
                }
            }
        }
        if (summary != null) {
            sink.accept(summary);
        }
        if (logIt) {
            sink.accept(
                    where + ": " + MessageFormatter.arrayFormat(format, args).getMessage());
        }
        if (schedule) {
            scheduleFlush();
        }
    }

    /** Writes the summary of a window that is over, if it has not been written yet. */
    void flush() {
        String summary;
        boolean early;
        synchronized (this) {
            summary = rollOver();
            early = summary == null && !suppressed.isEmpty(); // a timer that fired before the window's end
        }
        if (summary != null) {
            sink.accept(summary);
        }
        if (early) {
            scheduleFlush();
        }
    }

    private void scheduleFlush() {
        long left;
        synchronized (this) {
            left = Math.max(0, windowStart + windowNanos - nanoClock.getAsLong());
        }
        CommTimers.after(Duration.ofNanos(left).plusMillis(1), this::flush);
    }

    /** With the lock held: starts a new window if the current one is over; returns its summary, if any. */
    private String rollOver() {
        long now = nanoClock.getAsLong();
        if (now - windowStart < windowNanos) {
            return null;
        }
        String summary = summaryLine();
        suppressed.clear();
        loggedInWindow = 0;
        summaryScheduled = false;
        windowStart = now;
        return summary;
    }

    private String summaryLine() {
        if (suppressed.isEmpty()) {
            return null;
        }
        long total = suppressed.values().stream().mapToLong(Long::longValue).sum();
        StringBuilder b = new StringBuilder(where)
                .append(": ")
                .append(total)
                .append(total == 1 ? " more refusal" : " more refusals")
                .append(" in the last ")
                .append(TimeUnit.NANOSECONDS.toSeconds(windowNanos))
                .append(" s not logged one by one (at most ")
                .append(perWindow)
                .append(" a window): ");
        String sep = "";
        for (Map.Entry<String, Long> e : suppressed.entrySet()) {
            b.append(sep).append(e.getKey()).append(' ').append(e.getValue());
            sep = ", ";
        }
        return b.toString();
    }
}
