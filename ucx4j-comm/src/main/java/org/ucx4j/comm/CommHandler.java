package org.ucx4j.comm;

/**
 * Receives the comms a listener accepts, after their handshake (and authentication) succeeded.
 *
 * <p>Threading: called on a virtual thread of its own for each comm, so it may block and may serve the
 * comm for its whole life (read, write, close); the listener goes on accepting meanwhile. An exception
 * it throws is logged and aborts that comm.
 */
@FunctionalInterface
public interface CommHandler {
    /**
     * A client connected.
     *
     * @param comm the new comm, owned by the handler from now on
     */
    void onComm(Comm comm) throws Exception;
}
