package org.ucx4j.internal.worker;

import java.lang.foreign.MemorySegment;

/**
 * The upcalls that concern the objects a worker owns rather than its operations: endpoint failures,
 * connection requests and active messages. The public {@code UcxWorker} implements it with a private
 * object; every method runs on the lock holder, inside a UCX callback, and must not throw.
 */
public interface WorkerEvents {
    /** UCX's error callback for the endpoint with this id. */
    void onEndpointError(int endpointId, int status);

    /** A connection request reached the listener with this id. */
    void onConnectionRequest(int listenerId, MemorySegment connRequest);

    /**
     * An active message for the handler with this id; returns the {@code ucs_status_t} UCX expects
     * ({@code UCS_INPROGRESS} to keep the data).
     */
    byte onActiveMessage(
            int handlerId,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param);
}
