package org.ucx4j.cli;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.AmAllocator;
import org.ucx4j.AmHandler;
import org.ucx4j.AmMessage;
import org.ucx4j.AmSendMode;
import org.ucx4j.MemoryKind;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;

/**
 * Active messages with an id per kind and no user header ({@code ucp_am_send_nbx}, UCX choosing eager or
 * rendezvous by size, as {@code ucx_perftest -t ucp_am_bw} does).
 *
 * <p>Why "posted receives" for a push API: an active message needs no receive, but the benchmark's loops
 * post one per expected message, like tag receives. This class is the worker's {@link AmAllocator}: UCX
 * asks it for memory right before the handler runs, and it hands out the buffer of the oldest posted
 * receive, so the body lands in place (eager bodies are copied there, rendezvous bodies fetched there) and
 * nothing is allocated per message. A message that arrives before its receive is posted goes to fresh
 * memory and is copied when the receive comes, as UCX does with unexpected tag messages.
 *
 * <p>Threading: {@link #allocate} and {@link #onMessage} run on whichever thread progresses the worker,
 * one message after the other; {@link #recv} on the benchmark thread. The queues are guarded by
 * {@code this}.
 */
final class AmPath implements MessagePath, AmAllocator, AmHandler {
    private record Posted(MemorySegment buffer, Kind kind, CompletableFuture<Long> received) {}

    private final UcxEndpoint ep;
    private final ArrayDeque<Posted> posted = new ArrayDeque<>();
    private final ArrayDeque<AmMessage> unexpected = new ArrayDeque<>();
    /** The receive {@link #allocate} gave memory to, for the {@link #onMessage} call that follows it. */
    private Posted current;

    private AmPath(UcxEndpoint ep) {
        this.ep = ep;
    }

    /** Makes the path and installs it as the worker's allocator and as the handler of the three ids. */
    static AmPath install(UcxEndpoint ep) {
        AmPath path = new AmPath(ep);
        UcxWorker worker = ep.worker();
        worker.setAmAllocator(path);
        for (Kind kind : Kind.values()) {
            worker.setAmHandler(id(kind), path);
        }
        return path;
    }

    static int id(Kind kind) {
        return switch (kind) {
            case PING -> BenchProtocol.AM_PING;
            case PONG -> BenchProtocol.AM_PONG;
            case DATA -> BenchProtocol.AM_DATA;
        };
    }

    @Override
    public CompletableFuture<?> send(MemorySegment buffer, Kind kind) {
        return ep.amSendAsync(id(kind), MemorySegment.NULL, buffer, AmSendMode.AUTO);
    }

    @Override
    public CompletableFuture<Long> recv(MemorySegment buffer, Kind kind) {
        Posted p = new Posted(buffer, kind, new CompletableFuture<>());
        AmMessage early;
        synchronized (this) {
            early = unexpected.poll();
            if (early == null) {
                posted.add(p);
                return p.received();
            }
        }
        deliver(early, p);
        return p.received();
    }

    @Override
    public MemorySegment allocate(long size) {
        synchronized (this) {
            Posted head = posted.peek();
            if (head != null && head.buffer().byteSize() >= size) {
                current = posted.poll();
                return current.buffer();
            }
        }
        current = null;
        return BenchMemory.current().allocate(Arena.ofAuto(), size);
    }

    @Override
    public MemoryKind kind() {
        return BenchMemory.current().kind();
    }

    @Override
    public void copyEager(MemorySegment dst, MemorySegment eagerData) {
        BenchMemory.current().copy(dst, eagerData);
    }

    @Override
    public void onMessage(AmMessage message) {
        Posted target = current;
        current = null;
        if (target == null) {
            synchronized (this) {
                target = posted.poll();
                if (target == null) {
                    unexpected.add(message);
                    return;
                }
            }
        }
        deliver(message, target);
    }

    /** Completes a receive with a message, copying the body unless it already landed in the buffer. */
    private static void deliver(AmMessage message, Posted target) {
        if (message.id() != id(target.kind())) {
            target.received()
                    .completeExceptionally(new IllegalStateException(
                            "active message id " + message.id() + " arrived where " + target.kind() + " was expected"));
            return;
        }
        if (message.length() > target.buffer().byteSize()) {
            target.received()
                    .completeExceptionally(new IllegalStateException("active message of " + message.length()
                            + " bytes for a " + target.buffer().byteSize() + "-byte buffer"));
            return;
        }
        message.data().whenComplete((body, failure) -> {
            if (failure != null) {
                target.received().completeExceptionally(failure);
                return;
            }
            if (body.address() != target.buffer().address()) {
                BenchMemory.current().copy(target.buffer(), body);
            }
            target.received().complete(body.byteSize());
        });
    }
}
