package org.ucx4j.comm.internal;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.ucx4j.comm.CommException;

/**
 * The one place in ucx4j-comm that turns a failure (often wrapped by a future) into what a caller
 * throws, and into text for a message. Stateless; any thread.
 */
public final class Failures {
    private Failures() {}

    /**
     * The failure behind future wrappers, as an unchecked exception: runtime exceptions as they are,
     * errors thrown, anything else wrapped in a {@link CommException}.
     *
     * @param t the failure, possibly a {@link CompletionException} or {@link ExecutionException}
     * @return the exception to throw
     */
    public static RuntimeException unchecked(Throwable t) {
        Throwable cause = unwrapped(t);
        if (cause instanceof RuntimeException r) {
            return r;
        }
        if (cause instanceof Error e) {
            throw e;
        }
        return new CommException(describe(cause), cause);
    }

    /**
     * The failure's text: the message of what is behind future wrappers, or its class when it has none.
     *
     * @param t the failure
     * @return text for an error message
     */
    public static String describe(Throwable t) {
        Throwable cause = unwrapped(t);
        return cause.getMessage() != null ? cause.getMessage() : cause.toString();
    }

    private static Throwable unwrapped(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
