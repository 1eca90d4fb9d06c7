package org.ucx4j.internal.worker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A worker's queue of submitted tasks: many producers (any thread), one consumer (the holder of the
 * worker's progress lock). The tasks are the queue's nodes, so an {@link Operation}, which is its own
 * task, is queued without a node allocated for it; other {@link Runnable}s get a small node each.
 *
 * <p>Why not {@link java.util.concurrent.ConcurrentLinkedQueue}: on the hot path a thread submits an
 * operation and the progress thread takes it, so every object one writes and the other reads is a cache
 * line that crosses cores, per message. The JDK's queue adds its own node per element (written by the
 * producer, then compare-and-set by the consumer) and an emptiness check that reads the consumer's head;
 * here a producer writes only its task and the tail, and the consumer only reads the task's link. The
 * shape is Dmitry Vyukov's intrusive multi-producer single-consumer queue, with a stub node: an
 * exchange on the tail, then the old tail's link.
 *
 * <p>A producer that has exchanged the tail but not yet written the link leaves the queue briefly unable
 * to hand out its task: {@link #poll} returns null then, and {@link #isEmpty} says false, so whoever
 * waits for the queue to empty (a progress thread before it sleeps) comes back for it.
 *
 * <p>Taking a task back ({@link #revoke}): the destruction of a worker drains the queue one last time,
 * and a task queued concurrently is either run by that drain or refused to its submitter, never both and
 * never neither. Each task has a claim word set once, by the drain ({@link #poll}) or by the revoke.
 *
 * <p>Threading: {@link #offer}, {@link #isEmpty} and {@link #revoke}: any thread; {@link #poll}: the lock
 * holder only. A task is queued at most once in its life.
 */
final class SubmissionQueue {
    /**
     * A queued task: its link and its claim. Subclassed by {@link Operation}; {@link #of} wraps anything
     * else.
     */
    abstract static class Task implements Runnable {
        /** The next task, written once by the producer that queued it (release), read by the consumer. */
        @SuppressWarnings("unused") // through NEXT
        private volatile Task next;
        /** 0 while queued; 1 once the consumer took it; 2 once its producer revoked it. */
        @SuppressWarnings("unused") // through CLAIM
        private volatile int claim;
    }

    /** A {@link Runnable} that is not a {@link Task} itself, in a node of its own. */
    private static final class Wrapped extends Task {
        private final Runnable body;

        Wrapped(Runnable body) {
            this.body = body;
        }

        @Override
        public void run() {
            body.run();
        }
    }

    /** The node the queue holds when it is empty; never run. */
    private static final class Stub extends Task {
        @Override
        public void run() {
            throw new AssertionError("the queue's stub ran");
        }
    }

    private static final VarHandle NEXT;
    private static final VarHandle CLAIM;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            NEXT = l.findVarHandle(Task.class, "next", Task.class);
            CLAIM = l.findVarHandle(Task.class, "claim", int.class);
            TAIL = l.findVarHandle(SubmissionQueue.class, "tail", Task.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Task stub = new Stub();
    /** The last task queued: producers exchange it. */
    @SuppressWarnings("FieldMayBeFinal") // through TAIL
    private volatile Task tail = stub;
    /** The next node the consumer looks at (maybe the stub). Consumer only. */
    private Task head = stub;

    /** {@code task} as a queue node: itself if it is one, else wrapped in a node of its own. */
    static Task of(Runnable task) {
        return task instanceof Task t ? t : new Wrapped(task);
    }

    /** Appends {@code task}. Any thread; each task once. */
    void offer(Task task) {
        Task prev = (Task) TAIL.getAndSet(this, task);
        NEXT.setRelease(prev, task);
    }

    /**
     * Whether nothing is queued: true only when no producer has begun to queue a task the consumer has
     * not taken yet. Any thread.
     */
    boolean isEmpty() {
        return tail == stub;
    }

    /**
     * Takes the next task that was not revoked, or returns null when there is none (or the next one is
     * still being linked by its producer). Lock holder only.
     */
    Task poll() {
        while (true) {
            Task t = take();
            if (t == null || CLAIM.compareAndSet(t, 0, 1)) {
                return t;
            }
            // revoked by its producer: skip it
        }
    }

    private Task take() {
        Task h = head;
        Task next = (Task) NEXT.getAcquire(h);
        if (h == stub) {
            if (next == null) {
                return null;
            }
            head = next;
            h = next;
            next = (Task) NEXT.getAcquire(next);
        }
        if (next != null) {
            return leave(h, next);
        }
        if (h != tail) {
            return null; // a producer is between its exchange and its link: come back
        }
        // h is the last task: put the stub behind it, so that h can leave
        NEXT.set(stub, (Task) null);
        offer(stub);
        next = (Task) NEXT.getAcquire(h);
        if (next != null) {
            return leave(h, next);
        }
        return null; // a producer got in between: its link comes
    }

    /**
     * Moves the head past {@code h} and unlinks it: no producer writes its link again, and a task
     * someone keeps (a future keeps its operation) must not keep every task queued after it alive.
     */
    private Task leave(Task h, Task next) {
        head = next;
        NEXT.set(h, (Task) null);
        return h;
    }

    /**
     * Takes {@code task} back if the consumer has not taken it: it will never run. Any thread.
     *
     * @return true when it was revoked; false when the consumer took it (it ran or runs)
     */
    static boolean revoke(Task task) {
        return CLAIM.compareAndSet(task, 0, 2);
    }
}
