package org.ucx4j;

import java.lang.foreign.MemorySegment;

/**
 * One in-flight UCX operation. Lives in the worker's operation table from submission until UCX's
 * callback (or an immediate completion) and is only touched while holding the worker's progress lock.
 */
final class Operation {
    private final WorkerRuntime runtime;
    final OperationKind kind;
    final UcxFuture<Object> future;
    final UcxEndpoint endpoint;
    final long length;
    int id = -1;
    MemorySegment request = MemorySegment.NULL;
    /** Set when the operation fails for an outside reason (endpoint failure, close) before UCX says so. */
    UcxException overrideFailure;
    boolean cancelRequested;
    /** A native copy of a heap buffer, freed at completion. */
    MemorySegment staging;
    /** A native copy of an active message's user header (UCX reads it until completion), freed at completion. */
    MemorySegment headerStaging;
    /** More native blocks freed at completion: a scatter-gather list and its staged heap parts. */
    java.util.List<MemorySegment> extraStaging;
    /** Where to copy received bytes back to (heap receives), or null. */
    MemorySegment copyBackTo;
    Operation epPrev;
    Operation epNext;

    @SuppressWarnings("unchecked")
    Operation(WorkerRuntime runtime, OperationKind kind, UcxEndpoint endpoint, long length, UcxFuture<?> future) {
        this.runtime = runtime;
        this.kind = kind;
        this.endpoint = endpoint;
        this.length = length;
        this.future = (UcxFuture<Object>) future;
        future.bind(this);
    }

    WorkerRuntime runtime() {
        return runtime;
    }

    String describe() {
        StringBuilder sb = new StringBuilder();
        sb.append(length).append(" bytes");
        if (endpoint != null) {
            sb.append(", endpoint ").append(endpoint.describePeer());
        }
        return sb.toString();
    }
}
