package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.UcxEndpoint;

/**
 * The endpoint's byte stream. It has no kinds or boundaries: each receive waits for exactly its buffer's
 * size, and receives posted in order complete in order, so a window of them splits the stream into the
 * sender's messages.
 */
record StreamPath(UcxEndpoint ep) implements MessagePath {
    @Override
    public CompletableFuture<?> send(MemorySegment buffer, Kind kind) {
        return ep.streamSendAsync(buffer);
    }

    @Override
    public CompletableFuture<Long> recv(MemorySegment buffer, Kind kind) {
        return ep.streamRecvAsync(buffer);
    }
}
