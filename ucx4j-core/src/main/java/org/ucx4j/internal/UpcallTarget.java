package org.ucx4j.internal;

import java.lang.foreign.MemorySegment;

/**
 * What a worker does when UCX calls back. Implemented by the worker runtime; every method runs on the
 * thread that is inside a UCX call for that worker (normally its progress thread) and must not throw.
 */
public interface UpcallTarget {
    /** A send-like request (send, flush, close) finished. */
    void onSendComplete(int opId, long request, int status);

    /** A tag receive finished. */
    void onTagRecvComplete(int opId, long request, int status, long senderTag, long length);

    /** A stream (or active-message data) receive finished. */
    void onStreamRecvComplete(int opId, long request, int status, long length);

    /** An endpoint failed. */
    void onEndpointError(int endpointId, MemorySegment ep, int status);

    /** A client asked a listener to connect. */
    void onConnectionRequest(int listenerId, MemorySegment connRequest);

    /**
     * An active message arrived.
     *
     * @return the {@code ucs_status_t} to give UCX: OK when the data was consumed, INPROGRESS when it is
     *     being received or kept
     */
    byte onActiveMessage(
            int handlerId,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param);

    /** An upcall itself failed: report it, never rethrow into native code. */
    void onUpcallFailure(String what, Throwable failure);
}
