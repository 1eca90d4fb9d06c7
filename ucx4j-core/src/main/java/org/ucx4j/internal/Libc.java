package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * The few libc calls the binding needs: {@code setenv}/{@code getenv} (UCX reads its global options from
 * the process environment when it loads, and Java's {@code System.getenv} is a snapshot it never sees),
 * {@code poll} on the worker's event fd, {@code malloc}/{@code free} for staging copies that outlive the
 * calling thread, and {@code open_memstream} to capture UCX's {@code FILE*} printers.
 *
 * <p>Threading: every method is safe from any thread; {@code setenv} is only called before UCX loads.
 */
public final class Libc {
    private static final MethodHandle SETENV;
    private static final MethodHandle GETENV;
    private static final MethodHandle POLL;
    private static final MethodHandle MALLOC;
    private static final MethodHandle FREE;
    private static final MethodHandle OPEN_MEMSTREAM;
    private static final MethodHandle FCLOSE;
    private static final MethodHandle FFLUSH;

    /** {@code POLLIN} from {@code <poll.h>}. */
    private static final short POLLIN = 0x1;

    static {
        SymbolLookup libc = NativeLinker.libc();
        SETENV = NativeLinker.downcall(libc, "setenv", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        GETENV = NativeLinker.downcall(libc, "getenv", FunctionDescriptor.of(ADDRESS, ADDRESS));
        // poll blocks: it must not be critical. errno is not captured: a poll interrupted by a signal
        // (EINTR) returns -1, which reads as "not readable", and every caller polls again in a loop.
        POLL = NativeLinker.downcall(libc, "poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        MALLOC = NativeLinker.downcall(
                libc, "malloc", FunctionDescriptor.of(ADDRESS, JAVA_LONG), Linker.Option.critical(false));
        FREE = NativeLinker.downcall(libc, "free", FunctionDescriptor.ofVoid(ADDRESS), Linker.Option.critical(false));
        OPEN_MEMSTREAM =
                NativeLinker.downcall(libc, "open_memstream", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        FCLOSE = NativeLinker.downcall(libc, "fclose", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        FFLUSH = NativeLinker.downcall(libc, "fflush", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    }

    private Libc() {}

    /** Sets a variable in the real process environment (what native code sees). */
    public static void setenv(String name, String value, boolean overwrite) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) SETENV.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), overwrite ? 1 : 0);
            if (rc != 0) {
                throw new IllegalStateException("setenv(" + name + ") failed");
            }
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /** Reads a variable from the real process environment (including what {@link #setenv} set). */
    public static String getenv(String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = (MemorySegment) GETENV.invokeExact(arena.allocateFrom(name));
            return NativeLinker.cString(value);
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /**
     * Waits until {@code fd} is readable or the timeout passes.
     *
     * @param pollfd a 8-byte scratch segment owned by the caller
     * @param timeoutMillis -1 for no timeout
     * @return true when readable; false on timeout or interruption by a signal
     */
    public static boolean pollIn(MemorySegment pollfd, int fd, int timeoutMillis) {
        pollfd.set(JAVA_INT, 0, fd);
        pollfd.set(JAVA_SHORT, 4, POLLIN);
        pollfd.set(JAVA_SHORT, 6, (short) 0);
        try {
            int rc = (int) POLL.invokeExact(pollfd, 1L, timeoutMillis);
            return rc > 0;
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /** {@code malloc}; the result must go back through {@link #free}. */
    public static MemorySegment malloc(long size) {
        try {
            MemorySegment p = (MemorySegment) MALLOC.invokeExact(Math.max(1L, size));
            if (p.equals(MemorySegment.NULL)) {
                throw new OutOfMemoryError("malloc(" + size + ") failed");
            }
            return NativeLinker.view(p, size);
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /** {@code free}. */
    public static void free(MemorySegment p) {
        try {
            FREE.invokeExact(p);
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /**
     * Runs a native printer that writes to a {@code FILE*} and returns what it wrote.
     *
     * @param printer receives the {@code FILE*}; runs on the calling thread
     */
    public static String capture(Consumer<MemorySegment> printer) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bufPtr = arena.allocate(ADDRESS);
            MemorySegment sizePtr = arena.allocate(JAVA_LONG);
            MemorySegment file = (MemorySegment) OPEN_MEMSTREAM.invokeExact(bufPtr, sizePtr);
            if (file.equals(MemorySegment.NULL)) {
                throw new IllegalStateException("open_memstream failed");
            }
            try {
                printer.accept(file);
                int ignored = (int) FFLUSH.invokeExact(file);
            } finally {
                int ignored = (int) FCLOSE.invokeExact(file);
            }
            MemorySegment buf = bufPtr.get(ADDRESS, 0);
            long size = sizePtr.get(JAVA_LONG, 0);
            try {
                byte[] bytes = NativeLinker.view(buf, size).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                return new String(bytes, StandardCharsets.UTF_8);
            } finally {
                free(buf);
            }
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }
}
