package org.ucx4j.cuda;

import java.util.BitSet;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import org.ucx4j.cuda.internal.Sched;

/**
 * CPU affinity of threads and the processes they start (Linux {@code sched_getaffinity} and
 * {@code sched_setaffinity} over FFM), and CPU lists in the kernel's notation ({@code 0-3,8}).
 *
 * <p>Why on a thread: Linux keeps the affinity per thread, and a process inherits the affinity of the thread
 * that created it. {@link #callPinned} runs an action on a fresh platform thread restricted to a set, so
 * that a process started there ({@link ProcessBuilder#start()}) and every thread of that process start
 * with that set, while the caller's threads keep theirs. ucx4j's launcher starts each worker so.
 *
 * <p>Threading: every method is safe from any thread.
 */
public final class CpuAffinity {
    private CpuAffinity() {}

    /**
     * The CPUs the calling thread may run on ({@code sched_getaffinity}): the process's allowed set unless
     * something narrowed this thread.
     *
     * @return bit n set for CPU n
     * @throws IllegalStateException when the kernel refuses to say (the message names the error)
     */
    public static BitSet allowed() {
        return Sched.getAffinity();
    }

    /**
     * Runs {@code action} on a new platform thread whose affinity is {@code cpus}, and waits for it.
     * Processes the action starts inherit {@code cpus}; the calling thread is not changed.
     *
     * @param cpus the CPUs, not empty
     * @param action what to run, for example {@code builder::start}
     * @param <T> its result
     * @return what the action returned
     * @throws IllegalArgumentException when {@code cpus} is empty
     * @throws IllegalStateException when the kernel refuses the set (for example CPUs outside this
     *     process's cgroup), naming the error
     * @throws Exception what the action threw
     */
    public static <T> T callPinned(BitSet cpus, Callable<T> action) throws Exception {
        BitSet copy = (BitSet) cpus.clone();
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name("ucx4j-pinned-" + format(copy)).start(() -> {
            try {
                Sched.setAffinity(copy);
                result.set(action.call());
            } catch (Exception e) {
                failure.set(e);
            }
        });
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // the action (a process start) is short: finish it, then report
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (failure.get() != null) {
            throw failure.get();
        }
        return result.get();
    }

    /**
     * Parses a CPU list as the kernel prints it ({@code /sys/.../cpulist}, {@code taskset -c}):
     * comma-separated CPUs and inclusive ranges.
     *
     * @param list for example {@code 0-3,8,10-11}
     * @return the set
     * @throws IllegalArgumentException naming the bad part: empty, not a number, a range backwards, a CPU
     *     above 8,191
     */
    public static BitSet parse(String list) {
        BitSet cpus = new BitSet();
        if (list == null || list.isBlank()) {
            throw new IllegalArgumentException("empty CPU list (expected for example 0-3,8)");
        }
        for (String part : list.trim().split(",", -1)) {
            String p = part.trim();
            int dash = p.indexOf('-');
            try {
                int from = Integer.parseInt(dash < 0 ? p : p.substring(0, dash));
                int to = dash < 0 ? from : Integer.parseInt(p.substring(dash + 1));
                if (from < 0 || to < from || to > 8191) {
                    throw new IllegalArgumentException(
                            "bad CPU range '" + p + "' in CPU list '" + list + "' (CPUs 0..8191, ranges low-high)");
                }
                cpus.set(from, to + 1);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "bad CPU list '" + list + "' at '" + p + "' (expected for example 0-3,8)", e);
            }
        }
        return cpus;
    }

    /**
     * Formats a set as the kernel prints CPU lists.
     *
     * @param cpus bit n for CPU n
     * @return for example {@code 0-31} or {@code 0-15,32-47}; empty for an empty set
     */
    public static String format(BitSet cpus) {
        StringBuilder b = new StringBuilder();
        int i = cpus.nextSetBit(0);
        while (i >= 0) {
            int end = cpus.nextClearBit(i) - 1;
            if (!b.isEmpty()) {
                b.append(',');
            }
            b.append(i);
            if (end > i) {
                b.append('-').append(end);
            }
            i = cpus.nextSetBit(end + 1);
        }
        return b.toString();
    }
}
