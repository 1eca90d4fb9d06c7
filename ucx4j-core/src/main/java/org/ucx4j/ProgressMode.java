package org.ucx4j;

import java.util.Locale;

/**
 * How a {@link UcxWorker} makes progress: who calls UCX's progress function, and how it waits.
 *
 * <p>Threading: an immutable constant, safe everywhere.
 */
public enum ProgressMode {
    /**
     * The default: a worker-owned platform thread progresses, spins briefly, then arms the worker and
     * sleeps on its event file descriptor until the network or a submitting thread wakes it. While a send,
     * an RMA operation or a GPU-memory receive of 64 KiB or more is in flight it polls for up to a
     * millisecond after its last progress before it sleeps (UCX reports GPU copies through the event fd,
     * but late: tens of microseconds per step); a zero {@link WorkerOptions#spin() spin} turns that off.
     * Idle workers use no CPU.
     */
    THREAD_BLOCKING("thread-blocking"),
    /** A worker-owned platform thread progresses in a busy loop: the lowest latency, one core busy. */
    THREAD_POLLING("thread-polling"),
    /**
     * No thread: the owner calls {@link UcxWorker#progress()}; blocking calls progress the worker
     * themselves while they wait. Handlers and future continuations run on whichever thread does that,
     * inside the call; an asynchronous call only queues its work until then (it may start it at once when
     * nothing is queued, but never runs other work).
     */
    CALLER("caller");

    private final String configName;

    ProgressMode(String configName) {
        this.configName = configName;
    }

    /**
     * The name used in configuration files, properties and on the command line.
     *
     * @return for example {@code thread-blocking}
     */
    public String configName() {
        return configName;
    }

    /**
     * Parses a configuration name ({@code thread-blocking}, {@code thread-polling}, {@code caller};
     * case-insensitive, {@code _} and {@code -} alike; {@code polling} and {@code blocking} are accepted
     * as short forms).
     *
     * @param text the name
     * @return the mode
     * @throws IllegalArgumentException naming the value and the accepted names when it is none of them
     */
    public static ProgressMode parse(String text) {
        String norm = text.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        for (ProgressMode mode : values()) {
            if (mode.configName.equals(norm)) {
                return mode;
            }
        }
        return switch (norm) {
            case "blocking", "thread" -> THREAD_BLOCKING;
            case "polling" -> THREAD_POLLING;
            case "caller-driven", "none" -> CALLER;
            default ->
                throw new IllegalArgumentException(
                        "unknown progress mode '" + text + "': expected thread-blocking, thread-polling or caller");
        };
    }
}
