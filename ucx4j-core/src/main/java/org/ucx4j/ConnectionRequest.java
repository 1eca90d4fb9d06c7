package org.ucx4j;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;

/**
 * A client's request to connect to a {@link UcxListener}, handed to its {@link ConnectionHandler}.
 *
 * <p>Threading: only valid inside the handler call (on the progress thread, or the thread progressing a
 * {@link ProgressMode#CALLER} worker); decide there, once.
 */
public final class ConnectionRequest {
    private final UcxListener listener;
    private final MemorySegment handle;
    private final InetSocketAddress clientAddress;
    private boolean decided;

    ConnectionRequest(UcxListener listener, MemorySegment handle, InetSocketAddress clientAddress) {
        this.listener = listener;
        this.handle = handle;
        this.clientAddress = clientAddress;
    }

    /**
     * The client's socket address.
     *
     * @return the address the connection came from
     */
    public InetSocketAddress clientAddress() {
        return clientAddress;
    }

    /**
     * The listener that received the request.
     *
     * @return the listener
     */
    public UcxListener listener() {
        return listener;
    }

    /**
     * Accepts the connection with no error handler (failures are logged).
     *
     * @return the new endpoint, usable at once, owned by the worker and the caller
     */
    public UcxEndpoint accept() {
        return accept(null);
    }

    /**
     * Accepts the connection.
     *
     * @param errorHandler told if the endpoint later fails, or null
     * @return the new endpoint, usable at once
     * @throws IllegalStateException when already accepted or rejected, or called outside the handler
     * @throws UcxException when UCX cannot create the endpoint
     */
    public UcxEndpoint accept(EndpointErrorHandler errorHandler) {
        decide();
        return listener.accept(this, handle, errorHandler);
    }

    /**
     * Rejects the connection: the client's connect fails.
     *
     * @throws IllegalStateException when already decided or called outside the handler
     */
    public void reject() {
        decide();
        listener.reject(handle);
    }

    boolean decided() {
        return decided;
    }

    private void decide() {
        if (decided) {
            throw new IllegalStateException("connection request from " + clientAddress + " was already decided");
        }
        if (!listener.worker().runtime().engine.inCallbackContext()) {
            throw new IllegalStateException("a connection request must be decided inside the ConnectionHandler");
        }
        decided = true;
    }

    @Override
    public String toString() {
        return "ConnectionRequest[from " + clientAddress + "]";
    }
}
