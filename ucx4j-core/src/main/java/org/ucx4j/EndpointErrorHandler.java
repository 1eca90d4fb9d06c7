package org.ucx4j;

/**
 * Told when an endpoint fails (peer died, connection reset, keep-alive timeout). By the time it runs,
 * every operation pending on the endpoint is failing with the same error, and the endpoint is being
 * closed: nothing waits forever.
 *
 * <p>Threading: runs on the worker's progress thread (in {@link ProgressMode#CALLER} mode, on the thread
 * inside {@link UcxWorker#progress()} or a blocking call of that worker), never on a thread that merely
 * submits an operation or waits for one ({@linkplain org.ucx4j the package's threading contract}). It must
 * not block; blocking ucx4j calls on this worker are refused there, asynchronous ones (a reconnect's
 * {@code connectAsync}) are fine. A handler that throws is logged, never propagated into UCX.
 */
@FunctionalInterface
public interface EndpointErrorHandler {
    /**
     * Called once per failed endpoint.
     *
     * @param endpoint the endpoint that failed
     * @param error why
     */
    void onError(UcxEndpoint endpoint, UcxException error);
}
