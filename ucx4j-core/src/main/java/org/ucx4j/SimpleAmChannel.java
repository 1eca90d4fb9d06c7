package org.ucx4j;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

/**
 * One endpoint's simple active-message channel ({@link UcxEndpoint#amSendAsync(MemorySegment)} and
 * {@link UcxEndpoint#amRecvAsync()}, UCXX's {@code am_send}/{@code am_recv} on the wire: AM id 0 and the
 * header of {@link SimpleAmHeader}): messages that arrived before anyone asked, and receivers waiting for
 * one, matched in order.
 *
 * <p>Threading: the queues are touched by the worker's lock holder only.
 */
final class SimpleAmChannel {
    private final UcxEndpoint endpoint;
    private final ArrayDeque<AmMessage> arrived = new ArrayDeque<>();
    private final ArrayDeque<UcxFuture<MemorySegment>> waiting = new ArrayDeque<>();

    SimpleAmChannel(UcxEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /** Sends {@code body}, memory of {@code kind}, with UCXX's header (AM id 0). */
    UcxFuture<Void> send(MemorySegment body, MemoryKind kind) {
        MemorySegment header = MemorySegment.ofArray(SimpleAmHeader.encode(kind));
        return endpoint.startAmSend(ActiveMessages.SIMPLE_ID, header, body, null, AmSendMode.AUTO);
    }

    UcxFuture<MemorySegment> receive() {
        EndpointLifecycle lifecycle = endpoint.lifecycle();
        lifecycle.ensureOpen();
        UcxFuture<MemorySegment> f = new UcxFuture<>();
        // A receive still waiting holds no UCX resource: canceling it just takes it off the queue. One that
        // a message was already handed to completes with that message (nothing is lost).
        f.cancelWith(reason -> endpoint.runtime().engine.later(() -> {
            if (waiting.remove(f)) {
                f.fail(reason);
            }
        }));
        endpoint.runtime().engine.execute(() -> {
            UcxException failed = lifecycle.failureIfFailed();
            if (failed != null) {
                f.fail(failed);
                return;
            }
            AmMessage next = arrived.poll();
            if (next != null) {
                chain(next.data(), f);
            } else {
                waiting.add(f);
            }
        });
        return f;
    }

    /** Lock held: a message from our peer arrived. */
    void deliver(AmMessage message) {
        UcxFuture<MemorySegment> w = waiting.poll();
        if (w != null) {
            chain(message.data(), w);
        } else {
            arrived.add(message);
        }
    }

    /** Lock held: fails every waiting receive. */
    void failWaiters(UcxException why) {
        UcxFuture<MemorySegment> w;
        while ((w = waiting.poll()) != null) {
            w.fail(why);
        }
    }

    private static void chain(UcxFuture<MemorySegment> from, UcxFuture<MemorySegment> to) {
        to.completeFrom(from);
    }
}
