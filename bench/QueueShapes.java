import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;

/**
 * What one submission and its completion cost between two spinning threads, for six shapes of a threaded
 * worker's hand-off, with no UCX: each round trip (in all but the last two) allocates an operation, hands it to a consumer thread, which
 * completes it, and the producer spins until it sees the completion. The shapes:
 * <ul>
 *   <li>{@code intrusive}: the core's queue of session 20 (the operation is the node; the consumer puts a
 *       stub back behind the last node, writing the producers' tail) and a separate future;
 *   <li>{@code keep-last}: the last operation taken stays as the queue's dummy, so the consumer never writes
 *       the tail; separate future;
 *   <li>{@code keep-last-merged}: the same, the operation being its own future;
 *   <li>{@code slot-merged}: no queue, one slot the producer fills and the consumer empties (a per-thread
 *       slot's shape), the operation being its own future;
 *   <li>{@code slot-reused}: the same slot, and one operation object reused for every hand-off (its
 *       parameters rewritten, its completion a sequence number): no object allocated per hand-off;
 *   <li>{@code volatile}: the floor, one field each way.
 * </ul>
 * Prints ns per hand-off (round trip / 2), each shape for the given number of rounds. Figures: docs/BENCHMARKS.md,
 * "What a hand-off costs on the quiet machines, and the heap there".
 *
 * <pre>
 *   javac -d /tmp/qs bench/QueueShapes.java; java -cp /tmp/qs QueueShapes [rounds] [round trips]
 * </pre>
 */
public class QueueShapes {
    static volatile boolean stop;

    interface Q {
        void offer(Object op);

        Object poll();
    }

    /**
     * A task with a link. It is a future itself, completed in the merged shapes; the others complete a
     * separate future (the shape of an Operation and its UcxFuture), leaving this one's fields unused.
     */
    static final class Node extends CompletableFuture<Long> {
        volatile Node next;
        volatile int claim;
        CompletableFuture<Long> future;
        long a, b, c, d; // the operation's parameters
    }

    static final VarHandle NEXT, CLAIM, TAIL_I, TAIL_K;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            NEXT = l.findVarHandle(Node.class, "next", Node.class);
            CLAIM = l.findVarHandle(Node.class, "claim", int.class);
            TAIL_I = l.findVarHandle(Intrusive.class, "tail", Node.class);
            TAIL_K = l.findVarHandle(KeepLast.class, "tail", Node.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Session 20's queue. */
    static final class Intrusive implements Q {
        final Node stub = new Node();
        volatile Node tail = stub;
        Node head = stub;

        public void offer(Object o) {
            Node t = (Node) o;
            Node prev = (Node) TAIL_I.getAndSet(this, t);
            NEXT.setRelease(prev, t);
        }

        boolean isEmpty() {
            return head == stub && tail == stub;
        }

        public Object poll() {
            if (isEmpty()) {
                return null;
            }
            Node h = head;
            Node next = (Node) NEXT.getAcquire(h);
            if (h == stub) {
                if (next == null) {
                    return null;
                }
                head = next;
                NEXT.set(stub, (Node) null);
                h = next;
                next = (Node) NEXT.getAcquire(next);
            }
            if (next != null) {
                return leave(h, next);
            }
            if (h != tail) {
                return null;
            }
            NEXT.set(stub, (Node) null);
            offer(stub);
            next = (Node) NEXT.getAcquire(h);
            if (next != null) {
                return leave(h, next);
            }
            return null;
        }

        private Object leave(Node h, Node next) {
            head = next;
            NEXT.set(h, (Node) null);
            return CLAIM.compareAndSet(h, 0, 1) ? h : null;
        }
    }

    /** The last task taken stays as the dummy: the consumer writes only its own head. */
    static final class KeepLast implements Q {
        volatile Node tail;
        Node head;

        KeepLast() {
            Node d = new Node();
            tail = d;
            head = d;
        }

        public void offer(Object o) {
            Node t = (Node) o;
            Node prev = (Node) TAIL_K.getAndSet(this, t);
            NEXT.setRelease(prev, t);
        }

        public Object poll() {
            Node next = (Node) NEXT.getAcquire(head);
            if (next == null) {
                return null;
            }
            head = next;
            return CLAIM.compareAndSet(next, 0, 1) ? next : null;
        }
    }

    /** One slot: the producer waits for it to be empty (it always is here: one operation at a time). */
    static final class Slot implements Q {
        volatile Object slot;

        public void offer(Object o) {
            slot = o;
        }

        public Object poll() {
            Object o = slot;
            if (o != null) {
                slot = null;
            }
            return o;
        }
    }

    /** An operation reused for every hand-off: parameters, and the sequence number of its last completion. */
    static final class Reused {
        long a, b;
        volatile long done;
        long value;
    }

    static volatile long ping, pong;

    public static void main(String[] a) throws Exception {
        int rounds = a.length > 0 ? Integer.parseInt(a[0]) : 3;
        int n = a.length > 1 ? Integer.parseInt(a[1]) : 1_000_000;
        for (String shape : new String[] {"intrusive", "keep-last", "keep-last-merged", "slot-merged", "slot-reused", "volatile"}) {
            for (int r = 0; r < rounds; r++) {
                System.out.printf("%s: %.1f ns per hand-off%n", shape, run(shape, n) / 2.0);
            }
        }
    }

    static double run(String shape, int n) throws Exception {
        stop = false;
        if (shape.equals("volatile")) {
            Thread b = new Thread(() -> {
                long seen = 0;
                while (!stop) {
                    long p = ping;
                    if (p != seen) {
                        seen = p;
                        pong = p;
                    } else {
                        Thread.onSpinWait();
                    }
                }
            });
            b.start();
            long base = ping;
            long t0 = System.nanoTime();
            for (long i = 1; i <= n; i++) {
                long v = base + i;
                ping = v;
                while (pong != v) {
                    Thread.onSpinWait();
                }
            }
            long t1 = System.nanoTime();
            stop = true;
            b.join();
            return (t1 - t0) / (double) n;
        }
        if (shape.equals("slot-reused")) {
            Slot q = new Slot();
            Thread c = new Thread(() -> {
                long seq = 0;
                while (!stop) {
                    Object o = q.poll();
                    if (o == null) {
                        Thread.onSpinWait();
                    } else {
                        Reused r = (Reused) o;
                        r.value = r.a + r.b;
                        r.done = ++seq;
                    }
                }
            });
            c.start();
            Reused r = new Reused();
            long t0 = System.nanoTime();
            long sum = 0;
            for (int i = 0; i < n; i++) {
                r.a = i;
                r.b = 1;
                q.offer(r);
                long want = i + 1;
                while (r.done != want) {
                    Thread.onSpinWait();
                }
                sum += r.value;
            }
            return finish(c, t0, sum, n);
        }
        boolean merged = shape.endsWith("merged");
        Q q = switch (shape) {
            case "intrusive" -> new Intrusive();
            case "slot-merged" -> new Slot();
            default -> new KeepLast();
        };
        Thread c = new Thread(() -> {
            while (!stop) {
                Object o = q.poll();
                if (o == null) {
                    Thread.onSpinWait();
                } else {
                    Node t = (Node) o;
                    (merged ? t : t.future).complete(t.a + t.b);
                }
            }
        });
        c.start();
        long t0 = System.nanoTime();
        long sum = 0;
        for (int i = 0; i < n; i++) {
            Node t = new Node();
            CompletableFuture<Long> f = merged ? t : new CompletableFuture<>();
            t.future = f;
            t.a = i;
            t.b = 1;
            q.offer(t);
            while (!f.isDone()) {
                Thread.onSpinWait();
            }
            sum += f.getNow(0L);
        }
        return finish(c, t0, sum, n);
    }

    /** Ends a run begun at {@code t0}: stops the consumer, checks that every completion was seen, ns per round trip. */
    static double finish(Thread consumer, long t0, long sum, int n) throws InterruptedException {
        long t1 = System.nanoTime();
        stop = true;
        consumer.join();
        if (sum != (long) n * (n - 1) / 2 + n) {
            throw new AssertionError("lost a completion: " + sum);
        }
        return (t1 - t0) / (double) n;
    }
}
