package org.ucx4j.internal.worker;

import java.lang.foreign.MemorySegment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxStatus;
import org.ucx4j.internal.UpcallTarget;

/**
 * Where {@link org.ucx4j.internal.Upcalls} delivers one worker's callbacks: completions go to its
 * {@link OperationTable}, the rest to its {@link WorkerEvents}. It counts how deep the lock holder is
 * inside callbacks, so that calls which destroy UCX objects can wait for the next round.
 *
 * <p>Threading: lock holder only (UCX calls back only from inside calls made with the lock held).
 */
final class UpcallDispatcher implements UpcallTarget {
    private static final Logger LOG = LoggerFactory.getLogger(UpcallDispatcher.class);

    private final WorkerEvents events;
    private final String workerName;
    private OperationTable operations;
    private int depth;

    UpcallDispatcher(WorkerEvents events, String workerName) {
        this.events = events;
        this.workerName = workerName;
    }

    /** Sets the table completions go to; once, before the worker posts anything. */
    void attach(OperationTable table) {
        this.operations = table;
    }

    /** Whether the lock holder is inside a UCX callback now. */
    boolean inUpcall() {
        return depth > 0;
    }

    @Override
    public void onSendComplete(int opId, long request, int status) {
        depth++;
        try {
            operations.complete(opId, request, status, null);
        } finally {
            depth--;
        }
    }

    @Override
    public void onTagRecvComplete(int opId, long request, int status, long senderTag, long length) {
        depth++;
        try {
            operations.complete(
                    opId, request, status, status == UcxStatus.OK.code() ? new TagInfo(senderTag, length) : null);
        } finally {
            depth--;
        }
    }

    @Override
    public void onStreamRecvComplete(int opId, long request, int status, long length) {
        depth++;
        try {
            operations.complete(opId, request, status, status == UcxStatus.OK.code() ? length : null);
        } finally {
            depth--;
        }
    }

    @Override
    public void onEndpointError(int endpointId, MemorySegment ep, int status) {
        depth++;
        try {
            events.onEndpointError(endpointId, status);
        } finally {
            depth--;
        }
    }

    @Override
    public void onConnectionRequest(int listenerId, MemorySegment connRequest) {
        depth++;
        try {
            events.onConnectionRequest(listenerId, connRequest);
        } finally {
            depth--;
        }
    }

    @Override
    public byte onActiveMessage(
            int handlerId,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        depth++;
        try {
            return events.onActiveMessage(handlerId, header, headerLength, data, length, param);
        } finally {
            depth--;
        }
    }

    @Override
    public void onUpcallFailure(String what, Throwable failure) {
        LOG.error("ucx4j worker {}: failure in {}", workerName, what, failure);
    }
}
