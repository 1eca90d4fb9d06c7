package org.ucx4j;

/**
 * Told when an endpoint fails (peer died, connection reset, keep-alive timeout). By the time it runs,
 * every operation pending on the endpoint is failing with the same error, and the endpoint is being
 * closed: nothing waits forever.
 *
 * <p>Threading: runs on the worker's progress thread (or the thread driving progress in
 * {@link ProgressMode#CALLER} mode). It must not block; blocking calls from it are refused. A handler
 * that throws is logged, never propagated into UCX.
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
