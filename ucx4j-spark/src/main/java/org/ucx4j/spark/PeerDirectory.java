package org.ucx4j.spark;

import java.net.URI;

/**
 * Where the fetcher learns a peer executor's shuffle server address, and where it reports what it
 * fetched. On a cluster: the driver's registry ({@link ExecutorAddressRegistry.Client}).
 *
 * <p>Threading: implementations are safe from any thread.
 */
interface PeerDirectory {
    /**
     * A peer's address.
     *
     * @param executorId the peer
     * @return its shuffle server's address
     * @throws RuntimeException when no address is known
     */
    URI lookup(String executorId);

    /**
     * Drops what is known of a peer's address (a connection to it failed), so that the next
     * {@link #lookup} asks again. Implementations that keep nothing do nothing.
     *
     * @param executorId the peer
     */
    default void forget(String executorId) {}

    /**
     * Notes bytes fetched through ucx4j (asynchronously; never blocks).
     *
     * @param executorId the executor that fetched them
     * @param bytes how many
     */
    void reportFetched(String executorId, long bytes);
}
