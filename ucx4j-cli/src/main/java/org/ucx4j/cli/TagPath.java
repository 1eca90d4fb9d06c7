package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxEndpoint;

/** Tag messages: each kind has its own tag, matched on all bits. */
record TagPath(UcxEndpoint ep) implements MessagePath {
    @Override
    public CompletableFuture<?> send(MemorySegment buffer, Kind kind) {
        return ep.tagSendAsync(buffer, tag(kind));
    }

    @Override
    public CompletableFuture<Long> recv(MemorySegment buffer, Kind kind) {
        return ep.worker()
                .tagRecvAsync(buffer, tag(kind), BenchProtocol.ALL_BITS, ep)
                .thenApply(TagInfo::length);
    }

    static long tag(Kind kind) {
        return switch (kind) {
            case PING -> BenchProtocol.PING;
            case PONG -> BenchProtocol.PONG;
            case DATA -> BenchProtocol.DATA;
        };
    }
}
