package org.ucx4j.testing;

import static org.awaitility.Awaitility.await;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.core.ConditionTimeoutException;
import org.ucx4j.ProgressMode;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerOptions;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.RunningJvm;

/**
 * The peer JVM for multi-process tests. Modes:
 * <ul>
 *   <li>{@code echo-server}: listens on an ephemeral port, prints {@code PORT n}, echoes tag and stream
 *       messages per {@link EchoProtocol}, until killed;</li>
 *   <li>{@code sink-server}: listens, prints {@code PORT n}, accepts, reads the hello, prints
 *       {@code READY}, then never answers (the test kills it);</li>
 *   <li>{@code clients N port firstId}: N client workers (ids firstId, firstId + 1, ...) connect at once, each does
 *       ten tag echoes; prints {@code CLIENT i OK} each and {@code DONE ok/N}.</li>
 *   <li>{@code rma-server size map|allocate}: maps (native memory of its own) or lets UCX allocate a
 *       region of {@code size} bytes, fills it with {@link RmaProtocol}'s initial pattern, listens,
 *       prints {@code PORT n}; serves each client per {@link RmaProtocol} until killed.</li>
 * </ul>
 * The progress mode comes from {@code -Ducx4jtest.progress}.
 */
public final class PeerMain {
    private static final boolean TRACE = Boolean.getBoolean("ucx4jtest.trace");

    private PeerMain() {}

    /**
     * Starts a peer JVM in {@code args[0]}'s mode (see the class comment).
     *
     * @param env extra environment for the peer
     * @param args the mode and its arguments
     * @return the running peer; close it to kill it
     */
    public static RunningJvm start(Map<String, String> env, String... args) {
        return start(env, List.of(), args);
    }

    /**
     * Starts a peer JVM with extra JVM options (a later {@code -Xmx} overrides the default 768 MiB).
     *
     * @param env extra environment for the peer
     * @param jvmOptions JVM options
     * @param args the mode and its arguments
     * @return the running peer; close it to kill it
     */
    public static RunningJvm start(Map<String, String> env, List<String> jvmOptions, String... args) {
        return ChildJvm.of(PeerMain.class)
                .jvm("-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
                .jvm(jvmOptions)
                .env(env)
                .args(args)
                .start();
    }

    public static void main(String[] args) throws Exception {
        ProgressMode mode = ProgressMode.parse(System.getProperty("ucx4jtest.progress", "thread-blocking"));
        WorkerOptions options = WorkerOptions.builder().progressMode(mode).build();
        switch (args[0]) {
            case "echo-server" -> echoServer(options, false);
            case "sink-server" -> echoServer(options, true);
            case "am-echo-server" -> amEchoServer(options);
            case "address-server" -> addressServer(options, java.nio.file.Path.of(args[1]));
            case "rma-server" -> rmaServer(options, Long.parseLong(args[1]), args[2].equals("allocate"));
            case "clients" ->
                clients(options, Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void echoServer(WorkerOptions options, boolean sink) throws Exception {
        Map<Integer, UcxEndpoint> clients = new ConcurrentHashMap<>();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker(options)) {
            UcxListener listener = worker.listen(0, ep -> Thread.ofVirtual().start(() -> serve(ep, clients, sink)));
            System.out.println("PORT " + listener.port());
            System.out.flush();
            if (sink) {
                idleUntilKilled();
                return;
            }
            try (Arena arena = Arena.ofShared()) {
                MemorySegment buf = arena.allocate(EchoProtocol.MAX_MESSAGE, 64);
                while (true) {
                    TagInfo info = worker.tagRecv(buf, 0, 0);
                    if ((info.senderTag() & EchoProtocol.REPLY_BIT) != 0) {
                        continue;
                    }
                    int id = (int) (info.senderTag() >>> 32);
                    if (TRACE) {
                        System.out.println("GOT tag=0x" + Long.toHexString(info.senderTag()) + " len=" + info.length());
                    }
                    UcxEndpoint ep = awaitClient(clients, id);
                    if (ep == null) {
                        System.out.println("UNKNOWN-CLIENT " + id);
                        continue;
                    }
                    try {
                        ep.tagSend(buf.asSlice(0, info.length()), info.senderTag() | EchoProtocol.REPLY_BIT);
                        if (TRACE) {
                            System.out.println(
                                    "SENT tag=0x" + Long.toHexString(info.senderTag() | EchoProtocol.REPLY_BIT));
                        }
                    } catch (RuntimeException e) {
                        System.out.println("SEND-FAILED " + e);
                    }
                }
            }
        }
    }

    /** Echoes every message of the simple active-message channel back to its sender. */
    private static void amEchoServer(WorkerOptions options) throws Exception {
        try (UcxContext ctx = UcxContext.builder().option("RNDV_THRESH", "1024").build();
                UcxWorker worker = ctx.newWorker(options)) {
            UcxListener listener = worker.listen(0, ep -> Thread.ofVirtual().start(() -> {
                try {
                    while (true) {
                        MemorySegment data = ep.amRecv();
                        ep.amSend(data);
                    }
                } catch (RuntimeException gone) {
                    // The client left.
                }
            }));
            System.out.println("PORT " + listener.port());
            idleUntilKilled();
        }
    }

    /** Hello tag of the address server: the payload is the client's worker address. */
    public static final long ADDRESS_HELLO_TAG = 0x4845_4C4C_4FL;

    /**
     * IP-less server: writes its worker address to {@code file} (atomically), then answers each hello
     * by connecting back to the sender's worker address and echoes tag messages to it.
     */
    private static void addressServer(WorkerOptions options, java.nio.file.Path file) throws Exception {
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker(options);
                Arena arena = Arena.ofShared()) {
            java.nio.file.Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            java.nio.file.Files.writeString(tmp, worker.address().toString());
            java.nio.file.Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            System.out.println("ADDRESS-WRITTEN");
            MemorySegment buf = arena.allocate(1 << 20);
            UcxEndpoint back = null;
            while (true) {
                TagInfo info = worker.tagRecv(buf, 0, 0);
                if (info.senderTag() == ADDRESS_HELLO_TAG) {
                    byte[] address = buf.asSlice(0, info.length()).toArray(ValueLayout.JAVA_BYTE);
                    back = worker.connect(org.ucx4j.WorkerAddress.of(address));
                    System.out.println("CONNECTED-BACK");
                } else if (back != null) {
                    back.tagSend(buf.asSlice(0, info.length()), info.senderTag() | EchoProtocol.REPLY_BIT);
                }
            }
        }
    }

    /** Parks this thread until the test kills the process. */
    static void idleUntilKilled() throws InterruptedException {
        new CountDownLatch(1).await();
    }

    /** The endpoint of client {@code id} once its hello arrived (5 s at most), or null. */
    private static UcxEndpoint awaitClient(Map<Integer, UcxEndpoint> clients, int id) {
        try {
            return await("client " + id + "'s hello")
                    .atMost(Duration.ofSeconds(5))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> clients.get(id), Objects::nonNull);
        } catch (ConditionTimeoutException e) {
            return null;
        }
    }

    private static void serve(UcxEndpoint ep, Map<Integer, UcxEndpoint> clients, boolean sink) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment hello = arena.allocate(8);
            ep.streamRecv(hello.asSlice(0, 4));
            int id = hello.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
            clients.put(id, ep);
            if (sink) {
                System.out.println("READY " + id);
                return;
            }
            MemorySegment len = arena.allocate(8);
            MemorySegment data = arena.allocate(EchoProtocol.MAX_MESSAGE, 64);
            while (true) {
                ep.streamRecv(len);
                long n = len.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                if (n > 0) {
                    ep.streamRecv(data.asSlice(0, n));
                }
                ep.streamSend(len);
                if (n > 0) {
                    ep.streamSend(data.asSlice(0, n));
                }
            }
        } catch (RuntimeException e) {
            // The client went away: expected at the end of every test. Forget it, so that nothing is
            // ever answered on its dead endpoint.
            clients.values().remove(ep);
        }
    }

    private static void clients(WorkerOptions options, int n, int port, int firstId) throws Exception {
        AtomicInteger ok = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(n);
        try (UcxContext ctx = UcxContext.create()) {
            for (int i = 0; i < n; i++) {
                // Distinct from every other client of the same server (the caller gives each batch its own
                // firstId): a late client must not reuse an id of an earlier batch, or the server would
                // answer it on the earlier, closed endpoint.
                int id = firstId + i;
                Thread.ofPlatform().start(() -> {
                    try (UcxWorker w = ctx.newWorker(options);
                            UcxEndpoint ep = w.connect("127.0.0.1", port);
                            Arena arena = Arena.ofShared()) {
                        EchoProtocol.hello(ep, id);
                        MemorySegment out = arena.allocate(4096);
                        MemorySegment in = arena.allocate(4096);
                        for (int k = 0; k < 10; k++) {
                            out.fill((byte) (id + k));
                            long got = EchoProtocol.echoTag(w, ep, out, in, EchoProtocol.tag(id, k));
                            if (got != 4096 || in.mismatch(out) != -1) {
                                throw new AssertionError("bad echo for client " + id);
                            }
                        }
                        ok.incrementAndGet();
                        System.out.println("CLIENT " + id + " OK");
                    } catch (Throwable t) {
                        System.out.println("CLIENT " + id + " FAILED " + t);
                    } finally {
                        done.countDown();
                    }
                });
            }
            done.await();
        }
        System.out.println("DONE " + ok.get() + "/" + n);
        System.exit(ok.get() == n ? 0 : 1);
    }

    // ---------------------------------------------------------------- RMA

    private static void rmaServer(WorkerOptions options, long size, boolean allocate) throws Exception {
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker(options);
                Arena arena = Arena.ofShared()) {
            org.ucx4j.MemoryRegion region =
                    allocate ? ctx.allocateMemory(size) : ctx.mapMemory(arena.allocate(size, 4096));
            MemorySegment mem = region.segment();
            RmaProtocol.fill(mem, RmaProtocol.INITIAL_SEED, 0);
            byte[] key = region.packRemoteKey();
            UcxListener listener = worker.listen(0, ep -> Thread.ofVirtual().start(() -> serveRma(ep, mem, key)));
            System.out.println("REGION " + region.size() + (region.isAllocated() ? " allocated" : " mapped"));
            System.out.println("PORT " + listener.port());
            System.out.flush();
            idleUntilKilled();
        }
    }

    private static void serveRma(UcxEndpoint ep, MemorySegment mem, byte[] key) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment hello = arena.allocate(4);
            ep.streamRecv(hello);
            MemorySegment word = arena.allocate(8);
            word.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, key.length);
            ep.streamSend(word);
            ep.streamSend(key);
            MemorySegment c = arena.allocate(32);
            while (true) {
                ep.streamRecv(c);
                long command = c.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                long seed = c.get(ValueLayout.JAVA_LONG_UNALIGNED, 8);
                long offset = c.get(ValueLayout.JAVA_LONG_UNALIGNED, 16);
                long length = c.get(ValueLayout.JAVA_LONG_UNALIGNED, 24);
                MemorySegment slice = mem.asSlice(offset, length);
                long answer;
                if (command == RmaProtocol.VERIFY) {
                    long m = RmaProtocol.mismatch(slice, seed, offset);
                    answer = m < 0 ? -1 : offset + m;
                } else if (command == RmaProtocol.FILL) {
                    RmaProtocol.fill(slice, seed, offset);
                    answer = 0;
                } else {
                    answer = -2;
                }
                word.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, answer);
                ep.streamSend(word);
            }
        } catch (RuntimeException e) {
            // The client went away.
        }
    }
}
