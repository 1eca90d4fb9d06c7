package org.ucx4j;

/**
 * Decides what a listener does with a client that wants to connect.
 *
 * <p>Threading: runs on the worker's progress thread (in {@link ProgressMode#CALLER} mode, on the thread
 * progressing it; see {@linkplain org.ucx4j the package's threading contract}); it must not block. It must
 * decide before returning: call
 * {@link ConnectionRequest#accept()} or {@link ConnectionRequest#reject()}; a request left undecided is
 * rejected when the handler returns. A handler that throws rejects the request and is logged.
 */
@FunctionalInterface
public interface ConnectionHandler {
    /**
     * Called once per incoming connection.
     *
     * @param request the client's request
     */
    void onConnectionRequest(ConnectionRequest request);
}
