package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.MemoryKind;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;

/**
 * Tag messages: each kind has its own tag, matched on all bits.
 *
 * @param ep the endpoint
 * @param declared the buffers' memory kind, told to UCX; null to let UCX detect it per operation
 */
record TagPath(UcxEndpoint ep, MemoryKind declared) implements MessagePath {
    @Override
    public CompletableFuture<?> send(MemorySegment buffer, Kind kind) {
        return declared == null ? ep.tagSendAsync(buffer, tag(kind)) : ep.tagSendAsync(buffer, declared, tag(kind));
    }

    @Override
    public CompletableFuture<Long> recv(MemorySegment buffer, Kind kind) {
        UcxWorker worker = ep.worker();
        return (declared == null
                        ? worker.tagRecvAsync(buffer, tag(kind), BenchProtocol.ALL_BITS, ep)
                        : worker.tagRecvAsync(buffer, declared, tag(kind), BenchProtocol.ALL_BITS, ep))
                .thenApply(TagInfo::length);
    }

    @Override
    public boolean hasBlockingCalls() {
        return true;
    }

    @Override
    public void sendNow(UcxWorker worker, MemorySegment buffer, Kind kind) {
        if (declared == null) {
            ep.tagSend(buffer, tag(kind));
        } else {
            ep.tagSend(buffer, declared, tag(kind));
        }
    }

    @Override
    public long recvNow(UcxWorker worker, MemorySegment buffer, Kind kind) {
        return (declared == null
                        ? worker.tagRecv(buffer, tag(kind), BenchProtocol.ALL_BITS, ep)
                        : worker.tagRecv(buffer, declared, tag(kind), BenchProtocol.ALL_BITS, ep))
                .length();
    }

    static long tag(Kind kind) {
        return switch (kind) {
            case PING -> BenchProtocol.PING;
            case PONG -> BenchProtocol.PONG;
            case DATA -> BenchProtocol.DATA;
        };
    }
}
