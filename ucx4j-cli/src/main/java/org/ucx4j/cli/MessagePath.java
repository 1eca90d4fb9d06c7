package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;

/**
 * How a two-sided operation (tag, stream or active message) moves one message, so that the ping-pong and
 * the windowed bandwidth loops of {@link BenchClient} and {@link BenchServer} are written once for all
 * three.
 *
 * <p>Threading: used by one thread at a time (the side's benchmark thread); futures complete on the
 * worker's progress thread.
 */
sealed interface MessagePath permits TagPath, StreamPath, AmPath {
    /** The role of a message: a client's ping, the server's echo of it, or bandwidth data. */
    enum Kind {
        PING,
        PONG,
        DATA
    }

    /**
     * Starts sending a buffer.
     *
     * @param buffer the bytes; must stay alive until the future completes
     * @param kind its role
     * @return completes when the buffer may be reused
     */
    CompletableFuture<?> send(MemorySegment buffer, Kind kind);

    /**
     * Starts receiving the next message of a kind into a buffer.
     *
     * @param buffer where it goes; must stay alive until the future completes
     * @param kind its role
     * @return the received length (a stream always fills the buffer)
     */
    CompletableFuture<Long> recv(MemorySegment buffer, Kind kind);

    /**
     * Whether {@link #sendNow} and {@link #recvNow} are blocking calls of their own (on a caller-driven
     * worker, calls without a future), rather than {@link #send} or {@link #recv} and a wait.
     *
     * @return true for tag messages
     */
    default boolean hasBlockingCalls() {
        return false;
    }

    /**
     * Sends a buffer and returns once it may be reused: the endpoint's blocking call where it has one (on a
     * caller-driven worker that runs without a future), else {@link #send} and a wait.
     *
     * @param worker the endpoint's worker
     * @param buffer the bytes
     * @param kind its role
     */
    default void sendNow(UcxWorker worker, MemorySegment buffer, Kind kind) {
        worker.await(send(buffer, kind));
    }

    /**
     * Receives the next message of a kind and returns its length: a blocking call where there is one,
     * else {@link #recv} and a wait.
     *
     * @param worker the endpoint's worker
     * @param buffer where it goes
     * @param kind its role
     * @return the received length
     */
    default long recvNow(UcxWorker worker, MemorySegment buffer, Kind kind) {
        return worker.await(recv(buffer, kind));
    }

    /**
     * The path of a two-sided operation on an endpoint.
     *
     * @param op tag, stream or am
     * @param ep the endpoint
     * @return the path
     * @throws IllegalArgumentException for put and get
     */
    static MessagePath of(BenchOp op, UcxEndpoint ep) {
        return switch (op) {
            case TAG -> new TagPath(ep, BenchMemory.current().declared());
            case STREAM -> new StreamPath(ep);
            case AM -> AmPath.install(ep);
            case PUT, GET -> throw new IllegalArgumentException(op.label() + " is one-sided");
        };
    }
}
