package org.ucx4j.cli;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxFuture;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;

/**
 * The passive side of {@code ucx4j pingpong}: listens, prints {@code PORT <n>} on stdout, accepts one
 * client, serves the runs it asks for (echoing pings, receiving and verifying data) until it says bye,
 * then exits. A second client is rejected while one is served.
 *
 * <p>Threading: the calling platform thread does all the blocking; the connection handler only hands
 * the endpoint over.
 */
final class PingPongServer {
    private final ProgressMode progress;
    private final UcxConfig config;
    private final PrintStream out;

    PingPongServer(ProgressMode progress, UcxConfig config, PrintStream out) {
        this.progress = progress;
        this.config = config;
        this.out = out;
    }

    /**
     * Serves one client.
     *
     * @param port the port, 0 for any
     */
    void serve(int port) {
        try (UcxSession session = UcxSession.open("ucx4j-pingpong-server", progress, config)) {
            UcxWorker worker = session.worker();
            CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
            UcxEndpoint ep;
            try (UcxListener listener = worker.listen(new InetSocketAddress(port), request -> {
                if (accepted.isDone()) {
                    request.reject();
                } else {
                    accepted.complete(request.accept());
                }
            })) {
                out.println("PORT " + listener.port());
                out.flush();
                ep = worker.await(accepted); // drives progress in caller mode
            }
            try (Arena arena = Arena.ofShared()) {
                MemorySegment control = arena.allocate(PingPongProtocol.CONTROL_SIZE, 8);
                while (true) {
                    TagInfo info = ep.tagRecv(control, PingPongProtocol.CONTROL, PingPongProtocol.ALL_BITS);
                    PingPongSettings run = PingPongProtocol.readControl(control, info.length());
                    if (run == null) {
                        // Answer the bye, so the client closes only after this side has read everything:
                        // a peer's close fails the endpoint, and receives posted after that are refused.
                        MemorySegment ack = arena.allocate(1);
                        ack.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) 1);
                        ep.tagSend(ack, PingPongProtocol.ACK);
                        break;
                    }
                    if (run.mode() == PingPongMode.LATENCY) {
                        echo(ep, run);
                    } else {
                        receive(ep, run);
                    }
                }
            }
            ep.close();
        }
    }

    /** Latency: echo every ping back as a pong, from the buffer it arrived in. */
    private static void echo(UcxEndpoint ep, PingPongSettings run) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(run.size(), 64);
            for (long i = 0; i < run.total(); i++) {
                TagInfo info = ep.tagRecv(buf, PingPongProtocol.PING, PingPongProtocol.ALL_BITS);
                long length = info.length();
                if (length != run.size()) {
                    throw new IllegalStateException("ping " + i + " has " + length + " bytes, expected " + run.size());
                }
                ep.tagSend(buf, PingPongProtocol.PONG);
            }
        }
    }

    /** Bandwidth: receive the warm-up, acknowledge, receive the measured messages, acknowledge. */
    private static void receive(UcxEndpoint ep, PingPongSettings run) {
        try (Arena arena = Arena.ofShared()) {
            Buffers buffers = Buffers.allocate(arena, run.size());
            MemorySegment ack = arena.allocate(1);
            boolean verifyFirstInWarmup = run.warmup() > 0;
            if (run.warmup() > 0) {
                phase(ep, run, buffers, ack, run.warmup(), true, false);
            }
            phase(ep, run, buffers, ack, run.iterations(), !verifyFirstInWarmup, true);
        }
    }

    private static void phase(UcxEndpoint ep, PingPongSettings run, Buffers buffers, MemorySegment ack, long n,
                              boolean verifyFirst, boolean verifyLast) {
        UcxWorker worker = ep.worker();
        if (verifyFirst) {
            buffers.first().fill((byte) 0);
        }
        if (verifyLast) {
            buffers.last().fill((byte) 0);
        }
        ArrayDeque<UcxFuture<TagInfo>> inflight = new ArrayDeque<>();
        for (long k = 0; k < n; k++) {
            if (inflight.size() == run.window()) {
                check(worker.await(inflight.poll()), run);
            }
            MemorySegment target = buffers.of(PingPongProtocol.slot(k, n, verifyFirst, verifyLast));
            inflight.add(ep.tagRecvAsync(target, PingPongProtocol.DATA, PingPongProtocol.ALL_BITS));
        }
        while (!inflight.isEmpty()) {
            check(worker.await(inflight.poll()), run);
        }
        boolean intact = (!verifyFirst || PingPongProtocol.matches(buffers.first(), Buffers.FIRST_SEED))
                && (!verifyLast || PingPongProtocol.matches(buffers.last(), Buffers.LAST_SEED));
        ack.set(java.lang.foreign.ValueLayout.JAVA_BYTE, 0, (byte) (intact ? 1 : 0));
        ep.tagSend(ack, PingPongProtocol.ACK);
    }

    private static void check(TagInfo info, PingPongSettings run) {
        long length = info.length();
        if (length != run.size()) {
            throw new IllegalStateException("data message has " + length + " bytes, expected " + run.size());
        }
    }
}
