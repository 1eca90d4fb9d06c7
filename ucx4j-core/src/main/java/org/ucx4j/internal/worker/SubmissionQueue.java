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
 * producer, then compare-and-set by the consumer) and an emptiness check that reads, and may move, the
 * consumer's head. Here a producer exchanges the tail and writes the previous tail's link; the consumer
 * reads links, and writes the tail only when the queue runs empty (it puts the stub back). The shape is
 * Dmitry Vyukov's intrusive multi-producer single-consumer queue, with a stub node.
 *
 * <p><b>The gap.</b> A producer that has exchanged the tail but not yet written the link leaves a gap:
 * its task and those behind it cannot be handed out until it writes the link ({@link #poll} returns null
 * meanwhile), and the tail may even be the stub again (the consumer put it back behind the gap). So
 * emptiness has two questions: {@link #isEmpty}, exact, for the consumer (is anything queued that was not
 * taken, gap or not); and {@link #mayBeEmpty}, for any thread, a filter that may say true while tasks are
 * queued, to be confirmed with {@link #isEmpty} under the lock. Whoever must not stop while tasks are
 * queued (a progress thread before it sleeps, the last drain) asks {@link #isEmpty}; tasks behind a gap
 * are then waited for, not left behind.
 *
 * <p>Taking a task back ({@link #revoke}): the destruction of a worker drains the queue one last time,
 * until {@link #isEmpty} (gaps included), and a task queued concurrently is either run by that drain or
 * refused to its submitter, never both and never neither. Each task has a claim word set once, by the
 * drain ({@link #poll}) or by the revoke.
 *
 * <p>Threading: {@link #offer}, {@link #mayBeEmpty} and {@link #revoke}: any thread; {@link #poll} and
 * {@link #isEmpty}: the consumer only (the lock holder; in the threaded modes the progress thread is the
 * only one that drains while it runs, and it may ask {@link #isEmpty} between its own holds of the lock;
 * the destruction drains once it stopped, and if it did not stop in time the two may overlap, but the
 * progress thread then sees {@code running} false and no longer drains or sleeps). A task is queued at
 * most once in its life.
 */
final class SubmissionQueue {
    /**
     * A queued task: its link and its claim. Subclassed by {@link Operation}; {@link #of} wraps anything
     * else.
     */
    abstract static class Task implements Runnable {
        /**
         * The task queued after this one: written by that task's producer (release), read by the
         * consumer, which clears it once it took this task (the stub's is written again each time the stub
         * goes back in).
         */
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
    /** The next node the consumer looks at (maybe the stub). Consumer only: ordered by the lock. */
    private Task head = stub;

    /** {@code task} as a queue node: itself if it is one, else wrapped in a node of its own. */
    static Task of(Runnable task) {
        return task instanceof Task t ? t : new Wrapped(task);
    }

    /** Appends {@code task}. Any thread; each task once. */
    void offer(Task task) {
        // The two writes with nothing between them: a gap lasts only while its producer is descheduled.
        Task prev = (Task) TAIL.getAndSet(this, task);
        NEXT.setRelease(prev, task);
    }

    /** The first half of {@link #offer}, for tests: makes {@code task} the tail; returns the task it follows. */
    Task exchange(Task task) {
        return (Task) TAIL.getAndSet(this, task);
    }

    /** The second half of {@link #offer}, for tests: links {@code task} behind {@code prev}, closing the gap. */
    static void link(Task prev, Task task) {
        NEXT.setRelease(prev, task);
    }

    /**
     * Whether every task queued so far was taken, tasks behind a gap included. Consumer only.
     */
    boolean isEmpty() {
        return head == stub && tail == stub;
    }

    /**
     * Whether the queue may be empty: false means a task is queued that the consumer has not taken. True
     * can be wrong (tasks behind a gap while the tail is the stub again): confirm with {@link #isEmpty}
     * under the lock. Any thread: it reads only the tail, a line producers write anyway.
     */
    boolean mayBeEmpty() {
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
            NEXT.set(stub, (Task) null); // nobody links behind the stub until it goes back in
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
