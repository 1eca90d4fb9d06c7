package org.ucx4j.cli;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.Feature;
import org.ucx4j.MemoryRegion;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;

/**
 * The passive side of {@code ucx4j bench}: listens on a JVM socket, prints {@code PORT <n>} on stdout,
 * exchanges worker addresses with one client ({@link BenchRendezvous}; connections that do not speak
 * that exchange are closed and the wait goes on), serves the runs it asks for until it says bye, then
 * exits. A second client is refused while one is served (the socket is closed by then).
 *
 * <p>Per run: two-sided operations echo pings (latency) or receive and verify data (bandwidth, rate)
 * through a {@link MessagePath}; one-sided operations get a region of {@code size} bytes allocated by
 * UCX, whose packed remote key goes to the client, and the server only answers the client's phase ends
 * (checking, after puts, that the region holds what the client last put).
 *
 * <p>Threading: the calling platform thread does all the blocking (which progresses the worker in caller
 * mode); the connection handler only hands the endpoint over.
 */
final class BenchServer {
    /** The pattern seed of the region that gets read. */
    static final long GET_SEED = 3;

    private final ProgressMode progress;
    private final UcxConfig config;
    private final PrintStream out;
    private final Set<Feature> features;

    /**
     * @param progress the progress mode
     * @param config the ucx4j configuration
     * @param out where {@code PORT <n>} goes
     * @param op the only operation to serve (its feature only), or null for any
     */
    BenchServer(ProgressMode progress, UcxConfig config, PrintStream out, BenchOp op) {
        this.progress = progress;
        this.config = config;
        this.out = out;
        this.features = op == null
                ? EnumSet.of(Feature.TAG, Feature.STREAM, Feature.AM, Feature.RMA)
                : EnumSet.of(Feature.TAG, op.feature());
    }

    /**
     * Serves one client.
     *
     * @param port the port, 0 for any
     */
    void serve(int port) {
        try (UcxSession session = UcxSession.open("ucx4j-bench-server", progress, config, features)) {
            UcxWorker worker = session.worker();
            UcxEndpoint ep;
            // A socket of the JVM's, not UCX's listener: see BenchRendezvous. Closed once the client is
            // in, so a second client is refused by the system.
            try (BenchRendezvous rendezvous = BenchRendezvous.listen(port, System.err)) {
                out.println("PORT " + rendezvous.port());
                out.flush();
                ep = rendezvous.accept(worker);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException("bench server: " + e.getMessage(), e);
            }
            try (Arena arena = Arena.ofShared()) {
                MemorySegment control = arena.allocate(BenchProtocol.CONTROL_SIZE, 8);
                MemorySegment ack = arena.allocate(1);
                while (true) {
                    TagInfo info = ep.worker().tagRecv(control, BenchProtocol.CONTROL, BenchProtocol.ALL_BITS, ep);
                    BenchSettings run = BenchProtocol.readControl(control, info.length());
                    if (run == null) {
                        // Answer the bye, so the client closes only after this side has read everything:
                        // a peer's close fails the endpoint, and receives posted after that are refused.
                        sendAck(ep, ack, true);
                        break;
                    }
                    if (!features.contains(run.op().feature())) {
                        throw new IllegalStateException("this server was started for other operations than "
                                + run.op().label() + " (its features: " + features + ")");
                    }
                    if (run.op().oneSided()) {
                        serveRegion(ep, session, run, ack);
                    } else {
                        serveMessages(ep, run, ack);
                    }
                }
            }
            ep.close();
        }
    }

    private static void sendAck(UcxEndpoint ep, MemorySegment ack, boolean ok) {
        ack.set(ValueLayout.JAVA_BYTE, 0, (byte) (ok ? 1 : 0));
        ep.tagSend(ack, BenchProtocol.ACK);
    }

    // ------------------------------------------------------------------ tag, stream, am

    private static void serveMessages(UcxEndpoint ep, BenchSettings run, MemorySegment ack) {
        MessagePath path = MessagePath.of(run.op(), ep); // before READY: active messages need their handlers
        ep.tagSend(ack.asSlice(0, 1), BenchProtocol.READY);
        try (Arena arena = Arena.ofShared()) {
            if (run.mode() == BenchMode.LATENCY) {
                echo(ep.worker(), path, run, BenchMemory.current().allocate(arena, run.size()));
            } else {
                Buffers buffers = Buffers.allocate(BenchMemory.current(), arena, run.size());
                boolean verifyFirstInWarmup = run.warmup() > 0;
                if (run.warmup() > 0) {
                    receive(ep, path, run, buffers, ack, run.warmup(), true, false);
                }
                receive(ep, path, run, buffers, ack, run.iterations(), !verifyFirstInWarmup, true);
            }
        }
    }

    /** Latency: echo every ping back as a pong, from the buffer it arrived in. */
    private static void echo(UcxWorker worker, MessagePath path, BenchSettings run, MemorySegment buf) {
        for (long i = 0; i < run.total(); i++) {
            long length = path.recvNow(worker, buf, MessagePath.Kind.PING);
            if (length != run.size()) {
                throw new IllegalStateException("ping " + i + " has " + length + " bytes, expected " + run.size());
            }
            path.sendNow(worker, buf, MessagePath.Kind.PONG);
        }
    }

    /** One bandwidth phase: a window of posted receives, then the verdict on the verified messages. */
    private static void receive(
            UcxEndpoint ep,
            MessagePath path,
            BenchSettings run,
            Buffers buffers,
            MemorySegment ack,
            long n,
            boolean verifyFirst,
            boolean verifyLast) {
        UcxWorker worker = ep.worker();
        BenchMemory memory = BenchMemory.current();
        if (verifyFirst) {
            memory.zero(buffers.first());
        }
        if (verifyLast) {
            memory.zero(buffers.last());
        }
        ArrayDeque<CompletableFuture<Long>> inflight = new ArrayDeque<>();
        for (long k = 0; k < n; k++) {
            if (inflight.size() == run.window()) {
                checkLength(worker.await(inflight.poll()), run);
            }
            MemorySegment target = buffers.receiving(BenchProtocol.slot(k, n, verifyFirst, verifyLast), k);
            inflight.add(path.recv(target, MessagePath.Kind.DATA));
        }
        while (!inflight.isEmpty()) {
            checkLength(worker.await(inflight.poll()), run);
        }
        sendAck(ep, ack, true); // everything arrived: the client's clock stops here, before the check below
        boolean intact = (!verifyFirst || memory.matches(buffers.first(), Buffers.FIRST_SEED))
                && (!verifyLast || memory.matches(buffers.last(), Buffers.LAST_SEED));
        sendAck(ep, ack, intact);
    }

    private static void checkLength(long length, BenchSettings run) {
        if (length != run.size()) {
            throw new IllegalStateException("data message has " + length + " bytes, expected " + run.size());
        }
    }

    // ------------------------------------------------------------------ put, get

    /**
     * One-sided: a region of the run's size, its key to the client, then one answer per phase end. While
     * waiting for a phase end this thread progresses the worker in caller mode, which transports that
     * emulate RMA with messages (tcp) need.
     */
    private static void serveRegion(UcxEndpoint ep, UcxSession session, BenchSettings run, MemorySegment ack) {
        BenchMemory mem = BenchMemory.current();
        try (Arena regionArena = Arena.ofShared();
                MemoryRegion region = mem.region(session.context(), regionArena, run.size());
                Arena arena = Arena.ofConfined()) {
            // UCX may allocate more than asked (a page at least): use the run's bytes only.
            MemorySegment memory = region.segment().asSlice(0, run.size());
            if (run.op() == BenchOp.GET) {
                mem.fill(memory, GET_SEED);
            } else {
                mem.zero(memory);
            }
            ep.tagSend(region.packRemoteKey(), BenchProtocol.READY);
            MemorySegment seed = arena.allocate(8, 8);
            for (int phase = 0; phase < run.phases(); phase++) {
                TagInfo info = ep.worker().tagRecv(seed, BenchProtocol.PHASE_END, BenchProtocol.ALL_BITS, ep);
                if (info.length() != 8) {
                    throw new IllegalStateException("phase end of " + info.length() + " bytes, expected 8");
                }
                long expected = BenchProtocol.readSeed(seed);
                boolean intact = expected == 0 || mem.matches(memory, expected);
                if (!intact) {
                    System.err.println("the region does not hold pattern " + expected + ": "
                            + mem.describeMismatch(memory, expected));
                }
                sendAck(ep, ack, intact);
            }
        }
    }
}
