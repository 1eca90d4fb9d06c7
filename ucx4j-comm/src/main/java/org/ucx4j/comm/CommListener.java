package org.ucx4j.comm;

import java.net.URI;
import java.util.List;

/**
 * A listening endpoint of some transport, from {@link Comms#listen}.
 *
 * <p>Ownership: the caller closes it. Closing stops accepting; comms already accepted stay open.
 * Threading: safe from any thread; {@link #close()} is idempotent.
 */
public interface CommListener extends AutoCloseable {
    /**
     * The address clients connect to (with the real port when listening on port 0).
     *
     * @return the address
     */
    URI address();

    /**
     * Every address this listener can be reached at: {@link #address()} first, then others (a
     * {@code ucx://} listener adds its IP-less {@code ucx-worker://} address).
     *
     * @return the addresses (by default just {@link #address()})
     */
    default List<URI> addresses() {
        return List.of(address());
    }

    /** Stops accepting. Idempotent. */
    @Override
    void close();
}
