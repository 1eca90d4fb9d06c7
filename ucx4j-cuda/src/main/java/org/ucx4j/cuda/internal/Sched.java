package org.ucx4j.cuda.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.BitSet;

/**
 * libc's {@code sched_getaffinity}/{@code sched_setaffinity} (sched.h, glibc) for the calling thread
 * ({@code pid} 0), with {@code errno} captured so that a failure says why.
 *
 * <p>The mask is 8,192 bits (1 KiB): larger than glibc's 1,024-bit {@code cpu_set_t}, so machines with more
 * CPUs than that still fit; the kernel accepts any size at least as large as its own mask.
 *
 * <p>Threading: every method acts on the calling thread only and is safe from any thread.
 */
public final class Sched {
    private static final int MASK_BYTES = 1024;
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle GET;
    private static final MethodHandle SET;
    private static final MethodHandle STRERROR;

    static {
        var libc = Linker.nativeLinker().defaultLookup();
        // int sched_getaffinity(pid_t pid, size_t cpusetsize, cpu_set_t *mask); the same for set.
        FunctionDescriptor fd = FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS);
        Linker.Option errno = Linker.Option.captureCallState("errno");
        GET = CudaLinker.downcall(libc, "sched_getaffinity", fd, errno);
        SET = CudaLinker.downcall(libc, "sched_setaffinity", fd, errno);
        STRERROR = CudaLinker.downcall(libc, "strerror", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    private Sched() {}

    /**
     * {@code sched_getaffinity(0, ...)}: the CPUs the calling thread may run on.
     *
     * @return bit n set for CPU n
     * @throws IllegalStateException naming the error when the call fails
     */
    public static BitSet getAffinity() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment mask = a.allocate(MASK_BYTES, 8);
            int rc = (int) GET.invokeExact(state, 0, (long) MASK_BYTES, mask);
            if (rc != 0) {
                throw failure("sched_getaffinity", state);
            }
            return BitSet.valueOf(mask.toArray(JAVA_LONG));
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("sched_getaffinity failed: " + t, t);
        }
    }

    /**
     * {@code sched_setaffinity(0, ...)}: restricts the calling thread (and the processes and threads it
     * creates from now on, which inherit it) to {@code cpus}.
     *
     * @param cpus bit n set for CPU n; not empty, below CPU 8,192
     * @throws IllegalArgumentException when the set is empty or too large
     * @throws IllegalStateException naming the error when the kernel refuses (for example a CPU that is
     *     offline or outside the cgroup's set: EINVAL)
     */
    public static void setAffinity(BitSet cpus) {
        if (cpus.isEmpty() || cpus.length() > MASK_BYTES * 8) {
            throw new IllegalArgumentException("a CPU set must name CPUs 0.." + (MASK_BYTES * 8 - 1) + ": " + cpus);
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            MemorySegment mask = a.allocate(MASK_BYTES, 8);
            long[] words = cpus.toLongArray();
            MemorySegment.copy(MemorySegment.ofArray(words), 0, mask, 0, words.length * 8L);
            int rc = (int) SET.invokeExact(state, 0, (long) MASK_BYTES, mask);
            if (rc != 0) {
                throw failure("sched_setaffinity", state);
            }
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("sched_setaffinity failed: " + t, t);
        }
    }

    private static IllegalStateException failure(String call, MemorySegment state) throws Throwable {
        int errno = (int) ERRNO.get(state, 0L);
        String text = CudaLinker.cString((MemorySegment) STRERROR.invokeExact(errno));
        return new IllegalStateException(call + " failed: " + text + " (errno " + errno + ")");
    }
}
