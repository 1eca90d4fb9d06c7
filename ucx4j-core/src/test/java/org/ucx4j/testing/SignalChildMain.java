package org.ucx4j.testing;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.ucx4j.TagInfo;
import org.ucx4j.Ucx;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;
import org.ucx4j.internal.Libc;

/**
 * Child JVM for {@code SignalSafetyTest}: with UCX loaded, a worker listening and a loopback endpoint
 * connected, makes the JVM take many of its own SIGSEGVs (implicit null checks in JIT-compiled code,
 * stack overflows into the guard pages), then proves UCX still works with a tag round trip and prints
 * {@code SURVIVED}. If UCX's error-signal handler had taken SIGSEGV, the JVM would die on the first one.
 */
public final class SignalChildMain {
    private SignalChildMain() {}

    /** The object dereferenced; null in some slots. */
    static final class Box {
        int value;

        Box(int value) {
            this.value = value;
        }

        int value() {
            return value;
        }
    }

    static volatile int sink;
    private static int depth;

    public static void main(String[] args) throws Exception {
        int npeTarget = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        Ucx.ensureAvailable();
        System.out.println("UCX " + Ucx.version() + " from " + Ucx.libraryPath());
        String signals = Libc.getenv("UCX_ERROR_SIGNALS");
        System.out.println("UCX_ERROR_SIGNALS=" + (signals == null ? "<null>" : "'" + signals + "'"));
        System.out.println("preset=" + Ucx.presetEnvironment());
        try (UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker()) {
            CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
            UcxListener listener = worker.listen(0, accepted::complete);
            UcxEndpoint client = worker.connect("127.0.0.1", listener.port());
            UcxEndpoint server = accepted.get(30, TimeUnit.SECONDS);
            System.out.println("UCX_READY port " + listener.port());
            System.out.flush();

            long npes = nullPointerRounds(npeTarget);
            System.out.println("NPE caught=" + npes);
            System.out.flush();

            int overflows = 0;
            for (int i = 0; i < 20; i++) {
                try {
                    depth = 0;
                    recurse(0);
                } catch (StackOverflowError e) {
                    overflows++;
                }
            }
            System.out.println("SOE caught=" + overflows + " (last depth " + depth + ")");
            System.out.flush();

            // A collection, so safepoints and GC run with UCX's threads alive too.
            System.gc();

            byte[] ping = "ping after signals".getBytes();
            byte[] got = new byte[ping.length];
            var recv = worker.tagRecvAsync(got, 11, -1L);
            client.tagSend(ping, 11);
            TagInfo info = recv.get(30, TimeUnit.SECONDS);
            byte[] pong = "pong".getBytes();
            byte[] back = new byte[pong.length];
            var recv2 = worker.tagRecvAsync(back, 12, -1L);
            server.tagSend(pong, 12);
            recv2.get(30, TimeUnit.SECONDS);
            if (info.length() != ping.length || !Arrays.equals(ping, got) || !Arrays.equals(pong, back)) {
                System.out.println("TAG_MISMATCH " + new String(got) + " / " + new String(back));
                System.exit(3);
            }
            System.out.println("TAG_OK");
            if (npes != npeTarget || overflows != 20) {
                System.exit(2);
            }
        }
        System.out.println("SURVIVED");
        System.out.flush();
    }

    /**
     * Calls {@link #npeRound} (200,000 dereferences, one in 20 of a null) until {@code target} NPEs were
     * caught. The same method runs many times, so the JIT compiles it and its dereferences become
     * implicit null checks, which the JVM implements with SIGSEGV.
     */
    private static long nullPointerRounds(int target) {
        Box[] boxes = new Box[20];
        for (int i = 1; i < boxes.length; i++) {
            boxes[i] = new Box(i);
        }
        long caught = 0;
        while (caught < target) {
            caught += npeRound(boxes, (int) Math.min(200_000, (target - caught) * boxes.length));
        }
        return caught;
    }

    static int npeRound(Box[] boxes, int iterations) {
        int caught = 0;
        int sum = 0;
        for (int i = 0; i < iterations; i++) {
            Box b = boxes[i % boxes.length];
            try {
                sum += b.value();
            } catch (NullPointerException e) {
                caught++;
            }
        }
        sink = sum;
        return caught;
    }

    private static int recurse(int d) {
        depth = d;
        return recurse(d + 1) + 1;
    }
}
