import java.lang.foreign.*;
import org.ucx4j.*;

/**
 * One worker in one process, its endpoint to itself (peer error handling off): what a worker's own path costs
 * per operation, with no second process. {@code pair}: a tag receive and a send posted, both awaited (UCX
 * matches them inside the send); {@code send}: one send awaited (the messages go unexpected, discarded every
 * 1,024); {@code flush}: one worker flush awaited (UCX completes it at once). In caller mode the waiting thread
 * runs everything; in the threaded modes every operation goes to the progress thread and back, so the
 * difference is what the hand-off costs. Prints ns per iteration for each round. Figures: docs/BENCHMARKS.md,
 * "The submission queue's task is its node".
 *
 * <pre>
 *   CP=ucx4j-core/target/ucx4j-core-0.1.0-SNAPSHOT.jar:$(ls ~/.m2/repository/org/slf4j/slf4j-api/2.0.17/*.jar)
 *   javac -cp $CP -d /tmp/sl bench/SelfLoop.java
 *   java --enable-native-access=ALL-UNNAMED -cp /tmp/sl:$CP SelfLoop THREAD_BLOCKING 300000 4 flush
 *   # args: CALLER|THREAD_BLOCKING|THREAD_POLLING, iterations a round, rounds, pair|send|flush (default pair)
 * </pre>
 *
 * On a machine of fewer than 8 cores, {@code -XX:ActiveProcessorCount=16} gives the spins of a many-core
 * machine (they yield on every step below 8 cores).
 */
public class SelfLoop {
    public static void main(String[] a) throws Exception {
        ProgressMode mode = ProgressMode.valueOf(a[0]);
        int n = Integer.parseInt(a[1]);
        int rounds = a.length > 2 ? Integer.parseInt(a[2]) : 5;
        String kind = a.length > 3 ? a[3] : "pair";
        try (UcxContext ctx = UcxContext.create()) {
            UcxWorker w = ctx.newWorker(WorkerOptions.builder().progressMode(mode).peerErrorHandling(false).build());
            UcxEndpoint ep = w.connect(w.address());
            Arena arena = Arena.ofShared();
            MemorySegment out = arena.allocate(8), in = arena.allocate(8);
            for (int r = 0; r < rounds; r++) {
                long t0 = System.nanoTime();
                switch (kind) {
                    case "pair" -> {
                        for (int i = 0; i < n; i++) {
                            UcxFuture<TagInfo> rf = w.tagRecvAsync(in, 7, -1L);
                            UcxFuture<Void> sf = ep.tagSendAsync(out, 7);
                            w.await(sf);
                            w.await(rf);
                        }
                    }
                    case "send" -> {
                        for (int i = 0; i < n; i++) {
                            w.await(ep.tagSendAsync(out, 9));
                            if ((i & 1023) == 1023) {
                                w.tagDiscard(9, -1L, 1 << 20);
                            }
                        }
                    }
                    case "flush" -> {
                        for (int i = 0; i < n; i++) {
                            w.await(w.flushAsync());
                        }
                    }
                    default -> throw new IllegalArgumentException(kind);
                }
                long t1 = System.nanoTime();
                System.out.printf("%s %s round %d: %.1f ns/iter%n", mode, kind, r, (t1 - t0) / (double) n);
            }
        }
    }
}
