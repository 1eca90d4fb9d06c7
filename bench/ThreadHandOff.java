import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a hand-off between two spinning Java threads costs on this machine, in two shapes: a {@code volatile}
 * field each way (the floor: one cache line moves), and a task through a {@link ConcurrentLinkedQueue} with a
 * new {@link CompletableFuture} completed back (the shape of a threaded worker's submission and completion).
 * Prints nanoseconds per hand-off (half a round trip), three runs of each; with the argument {@code pause} the
 * spins call {@link Thread#onSpinWait()}. Figures: docs/BENCHMARKS.md, "What a hand-off between two Java
 * threads costs".
 *
 * <pre>
 *   java bench/ThreadHandOff.java [pause]                       # a JDK: the source launcher compiles it
 *   javac -d /tmp/h bench/ThreadHandOff.java; java -cp /tmp/h ThreadHandOff   # a runtime without javac (bin/gpu-pack's)
 * </pre>
 */
public class ThreadHandOff {
    static volatile long ping, pong;
    static volatile boolean stop;

    public static void main(String[] a) throws Exception {
        int n = 2_000_000;
        boolean pause = a.length > 0 && a[0].equals("pause");
        // 1. volatile fields: one cache line each way
        Thread b = new Thread(() -> {
            long seen = 0;
            while (!stop) {
                long p = ping;
                if (p != seen) { seen = p; pong = p; } else if (pause) Thread.onSpinWait();
            }
        });
        b.start();
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            for (long i = 1; i <= n; i++) {
                long v = i + (long) round * n;
                ping = v;
                while (pong != v) { if (pause) Thread.onSpinWait(); }
            }
            System.out.printf("volatile%s: %.1f ns per hand-off (round trip / 2)%n", pause ? "+pause" : "", (System.nanoTime() - t0) / 2.0 / n);
        }
        stop = true; b.join();
        // 2. a queue of tasks and a future per hand-off (the shape of a threaded worker's submission and completion)
        stop = false;
        ConcurrentLinkedQueue<CompletableFuture<Long>> q = new ConcurrentLinkedQueue<>();
        Thread c = new Thread(() -> {
            while (!stop) {
                CompletableFuture<Long> f = q.poll();
                if (f != null) f.complete(1L); else if (pause) Thread.onSpinWait();
            }
        });
        c.start();
        int m = 1_000_000;
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < m; i++) {
                CompletableFuture<Long> f = new CompletableFuture<>();
                q.offer(f);
                while (!f.isDone()) { if (pause) Thread.onSpinWait(); }
            }
            System.out.printf("queue+future%s: %.1f ns per hand-off (round trip / 2)%n", pause ? "+pause" : "", (System.nanoTime() - t0) / 2.0 / m);
        }
        stop = true; c.join();
    }
}
