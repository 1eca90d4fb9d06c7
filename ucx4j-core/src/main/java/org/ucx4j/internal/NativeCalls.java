package org.ucx4j.internal;

import org.ucx4j.UcxException;
import org.ucx4j.UcxStatus;

/**
 * Calls a downcall handle without the checked {@code Throwable} of {@code invokeExact}, and the one place
 * that turns a throwable into an unchecked exception.
 *
 * <p>Why: {@code MethodHandle.invokeExact} declares {@code Throwable}; a downcall never throws a checked
 * exception in practice, so callers should not have to handle one. Threading: stateless, any thread.
 */
public final class NativeCalls {
    private NativeCalls() {}

    /** A downcall with no result. */
    @FunctionalInterface
    public interface VoidCall {
        /** Runs the call. @throws Throwable what {@code invokeExact} declares */
        void run() throws Throwable;
    }

    /** A downcall returning a status byte or an int. */
    @FunctionalInterface
    public interface IntCall {
        /** Runs the call. @return its result @throws Throwable what {@code invokeExact} declares */
        int run() throws Throwable;
    }

    /** Runs {@code call}; a checked throwable leaves as {@link #unchecked}. */
    public static void invoke(VoidCall call) {
        try {
            call.run();
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** Runs {@code call} and returns its result; a checked throwable leaves as {@link #unchecked}. */
    public static int callInt(IntCall call) {
        try {
            return call.run();
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /**
     * Rethrows runtime exceptions and errors as they are; wraps anything else (a checked exception, which
     * only a future completed by user code can carry) in a {@link UcxException} with
     * {@link UcxStatus#IO_ERROR} naming {@code ucx4j} as the call.
     *
     * @return never returns normally; declared so callers can write {@code throw unchecked(t)}
     */
    public static RuntimeException unchecked(Throwable t) {
        if (t instanceof RuntimeException re) {
            throw re;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new UcxException("ucx4j", UcxStatus.IO_ERROR.code(), String.valueOf(t), t);
    }
}
