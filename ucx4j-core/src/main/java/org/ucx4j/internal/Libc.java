package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
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
        // One descriptor per arity, shared with Ucp: see NativeLinker.words.
        SymbolLookup libc = NativeLinker.libc();
        SETENV = NativeLinker.downcallWords(libc, "setenv", 3);
        GETENV = NativeLinker.downcallWords(libc, "getenv", 1);
        // poll blocks: it must not be critical. errno is not captured: a poll interrupted by a signal
        // (EINTR) returns -1, which reads as "not readable", and every caller polls again in a loop.
        POLL = NativeLinker.downcallWords(libc, "poll", 3);
        MALLOC = NativeLinker.downcallWords(libc, "malloc", 1, Linker.Option.critical(false));
        FREE = NativeLinker.downcallWords(libc, "free", 1, Linker.Option.critical(false));
        OPEN_MEMSTREAM = NativeLinker.downcallWords(libc, "open_memstream", 2);
        FCLOSE = NativeLinker.downcallWords(libc, "fclose", 1);
        FFLUSH = NativeLinker.downcallWords(libc, "fflush", 1);
    }

    private Libc() {}

    /** Sets a variable in the real process environment (what native code sees). */
    public static void setenv(String name, String value, boolean overwrite) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) (long) SETENV.invokeExact(
                    arena.allocateFrom(name).address(),
                    arena.allocateFrom(value).address(),
                    overwrite ? 1L : 0L);
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
            MemorySegment value = MemorySegment.ofAddress(
                    (long) GETENV.invokeExact(arena.allocateFrom(name).address()));
            return NativeLinker.cString(value);
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /**
     * Waits until {@code fd} is readable or the timeout passes. The {@code struct pollfd} is this call's
     * own (a confined arena): {@code poll} gets a raw address ({@link Ucp}), so memory another thread could
     * free meanwhile must not be used for it.
     *
     * @param timeoutMillis -1 for no timeout
     * @return true when readable; false on timeout or interruption by a signal
     */
    public static boolean pollIn(int fd, int timeoutMillis) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pollfd = arena.allocate(8, 8);
            pollfd.set(JAVA_INT, 0, fd);
            pollfd.set(JAVA_SHORT, 4, POLLIN);
            pollfd.set(JAVA_SHORT, 6, (short) 0);
            int rc = (int) (long) POLL.invokeExact(pollfd.address(), 1L, (long) timeoutMillis);
            return rc > 0;
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }

    /** {@code malloc}; the result must go back through {@link #free}. */
    public static MemorySegment malloc(long size) {
        try {
            MemorySegment p = MemorySegment.ofAddress((long) MALLOC.invokeExact(Math.max(1L, size)));
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
            long unused = (long) FREE.invokeExact(p.address());
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
            MemorySegment file =
                    MemorySegment.ofAddress((long) OPEN_MEMSTREAM.invokeExact(bufPtr.address(), sizePtr.address()));
            if (file.equals(MemorySegment.NULL)) {
                throw new IllegalStateException("open_memstream failed");
            }
            try {
                printer.accept(file);
                long ignored = (long) FFLUSH.invokeExact(file.address());
            } finally {
                long ignored = (long) FCLOSE.invokeExact(file.address());
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
