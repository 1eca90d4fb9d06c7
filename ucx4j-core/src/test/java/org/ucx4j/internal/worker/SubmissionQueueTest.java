package org.ucx4j.internal.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The worker's submission queue alone (no UCX): order, emptiness, taking tasks back, and many producers
 * against one consumer.
 */
class SubmissionQueueTest {

    /** A task that records its producer and sequence number. */
    private static final class Numbered extends SubmissionQueue.Task {
        final int producer;
        final int seq;

        Numbered(int producer, int seq) {
            this.producer = producer;
            this.seq = seq;
        }

        @Override
        public void run() {}
    }

    @Test
    void handsTasksOutInOrderAndIsEmptyOnlyWhenAllAreTaken() {
        SubmissionQueue q = new SubmissionQueue();
        assertTrue(q.isEmpty());
        assertNull(q.poll());
        List<SubmissionQueue.Task> in = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            SubmissionQueue.Task t = new Numbered(0, i);
            in.add(t);
            q.offer(t);
            assertFalse(q.isEmpty());
        }
        for (int i = 0; i < 5; i++) {
            assertSame(in.get(i), q.poll(), "task " + i);
        }
        assertTrue(q.isEmpty(), "empty once every task was taken");
        assertNull(q.poll());
        // The queue is reusable after it emptied (its stub went back in).
        SubmissionQueue.Task again = new Numbered(0, 5);
        q.offer(again);
        assertFalse(q.isEmpty());
        assertSame(again, q.poll());
        assertNull(q.poll());
        assertTrue(q.isEmpty());
    }

    @Test
    void wrapsPlainRunnablesAndKeepsTasksAsTheirOwnNodes() {
        Numbered task = new Numbered(0, 0);
        assertSame(task, SubmissionQueue.of(task));
        AtomicInteger ran = new AtomicInteger();
        SubmissionQueue q = new SubmissionQueue();
        q.offer(SubmissionQueue.of(ran::incrementAndGet));
        SubmissionQueue.Task t = q.poll();
        t.run();
        assertEquals(1, ran.get());
    }

    @Test
    void aRevokedTaskIsSkippedAndATakenOneCannotBeRevoked() {
        SubmissionQueue q = new SubmissionQueue();
        Numbered a = new Numbered(0, 0);
        Numbered b = new Numbered(0, 1);
        Numbered c = new Numbered(0, 2);
        q.offer(a);
        q.offer(b);
        q.offer(c);
        assertTrue(SubmissionQueue.revoke(b), "b was still queued");
        assertFalse(SubmissionQueue.revoke(b), "revoked once");
        assertSame(a, q.poll());
        assertFalse(SubmissionQueue.revoke(a), "a was taken: it runs, it cannot be refused too");
        assertSame(c, q.poll(), "the revoked b is skipped");
        assertNull(q.poll());
        assertTrue(q.isEmpty());
    }

    @Test
    void tasksBehindAGapAreQueuedUntilTheProducerLinksThem() {
        // A producer that exchanged the tail but has not linked yet: its task, and any behind it, cannot
        // be handed out, but the queue is not empty.
        SubmissionQueue q = new SubmissionQueue();
        Numbered a = new Numbered(0, 0);
        Numbered b = new Numbered(1, 0);
        Numbered c = new Numbered(2, 0);
        q.offer(a);
        SubmissionQueue.Task beforeB = q.exchange(b);
        assertSame(a, beforeB);
        q.offer(c); // linked behind b, which is not linked yet
        assertFalse(q.isEmpty());
        assertFalse(q.mayBeEmpty());
        assertNull(q.poll(), "a cannot leave before its link to b is written");
        assertFalse(q.isEmpty(), "a, b and c are still queued");
        SubmissionQueue.link(beforeB, b);
        assertSame(a, q.poll());
        assertSame(b, q.poll());
        assertSame(c, q.poll());
        assertNull(q.poll());
        assertTrue(q.isEmpty());
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void isEmptyNeverSaysSoWhileATaskWhoseOfferReturnedIsQueued() throws Exception {
        // The consumer may put the stub back behind the last task it saw while another producer is in its
        // gap: the tail is the stub again, yet tasks are queued (what mayBeEmpty cannot tell). isEmpty must
        // not say true then: a progress thread would sleep, or a submission overtake queued ones.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(50); // one for all rounds
        for (int round = 0; round < 4; round++) { // a gap is hit in some rounds only: one in three, measured
            emptinessRound(deadline);
        }
    }

    private static void emptinessRound(long deadline) throws Exception {
        int producers = 4;
        int perProducer = 300_000;
        SubmissionQueue q = new SubmissionQueue();
        AtomicLong returned = new AtomicLong();
        List<Thread> threads = startProducers(producers, id -> {
            for (int i = 0; i < perProducer; i++) {
                q.offer(new Numbered(id, i));
                returned.incrementAndGet();
            }
        });
        long taken = 0;
        long total = (long) producers * perProducer;
        while (taken < total) {
            long offersDone = returned.get(); // before isEmpty: these offers returned before it was asked
            if (q.isEmpty()) {
                assertTrue(
                        taken >= offersDone,
                        "isEmpty said true with " + (offersDone - taken) + " returned offers not taken");
            }
            if (q.poll() != null) {
                taken++;
            } else if (System.nanoTime() > deadline) {
                throw new AssertionError("stuck at " + taken + " of " + total);
            }
        }
        for (Thread t : threads) {
            t.join();
        }
        assertTrue(q.isEmpty());
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void aDrainUntilEmptyWaitsForAProducerInItsGap() throws Exception {
        // The worker's last drain polls until isEmpty: a task behind a gap is taken once its producer links
        // it, not left behind.
        SubmissionQueue q = new SubmissionQueue();
        Numbered a = new Numbered(0, 0);
        SubmissionQueue.Task prev = q.exchange(a);
        CountDownLatch draining = new CountDownLatch(1);
        List<SubmissionQueue.Task> drained = new ArrayList<>();
        Thread drainer = Thread.ofPlatform().daemon().start(() -> {
            draining.countDown();
            while (!q.isEmpty()) {
                SubmissionQueue.Task t = q.poll();
                if (t != null) {
                    drained.add(t);
                } else {
                    Thread.onSpinWait();
                }
            }
        });
        assertTrue(draining.await(10, TimeUnit.SECONDS));
        SubmissionQueue.link(prev, a);
        drainer.join(TimeUnit.SECONDS.toMillis(20));
        assertFalse(drainer.isAlive(), "the drain ends once the gap closed");
        assertEquals(List.of(a), drained);
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void manyProducersOneConsumerEveryTaskOnceInEachProducersOrder() throws Exception {
        int producers = 4;
        int perProducer = 200_000;
        SubmissionQueue q = new SubmissionQueue();
        AtomicIntegerArray takenPer = new AtomicIntegerArray(producers);
        AtomicIntegerArray revokedPer = new AtomicIntegerArray(producers);
        AtomicInteger revoked = new AtomicInteger();
        List<Thread> threads = startProducers(producers, id -> {
            for (int i = 0; i < perProducer; i++) {
                Numbered t = new Numbered(id, i);
                q.offer(t);
                // Every 1000th task is taken back at once if the consumer has not taken it yet, as a
                // submitter does when the worker's destruction began.
                if (i % 1000 == 999 && SubmissionQueue.revoke(t)) {
                    revokedPer.incrementAndGet(id);
                    revoked.incrementAndGet();
                }
            }
        });
        int taken = 0;
        int[] lastSeq = new int[producers];
        Arrays.fill(lastSeq, -1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(50);
        while (taken + revoked.get() < producers * perProducer || !allDone(threads)) {
            SubmissionQueue.Task t = q.poll();
            if (t == null) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("stuck: " + taken + " taken, " + revoked.get() + " revoked");
                }
                Thread.onSpinWait();
                continue;
            }
            Numbered n = (Numbered) t;
            assertTrue(
                    n.seq > lastSeq[n.producer],
                    "producer " + n.producer + "'s order: " + n.seq + " after " + lastSeq[n.producer]);
            lastSeq[n.producer] = n.seq;
            takenPer.incrementAndGet(n.producer);
            taken++;
        }
        for (Thread t : threads) {
            t.join();
        }
        assertNull(q.poll());
        assertTrue(q.isEmpty());
        assertEquals(producers * perProducer, taken + revoked.get(), "every task taken or revoked, once");
        for (int p = 0; p < producers; p++) {
            assertEquals(perProducer, takenPer.get(p) + revokedPer.get(p), "producer " + p + "'s tasks");
        }
    }

    /**
     * Starts {@code producers} daemon threads, released together once all are started; thread {@code id}
     * runs {@code body.accept(id)}.
     */
    private static List<Thread> startProducers(int producers, IntConsumer body) {
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int id = p;
            threads.add(Thread.ofPlatform().daemon().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                body.accept(id);
            }));
        }
        start.countDown();
        return threads;
    }

    private static boolean allDone(List<Thread> threads) {
        for (Thread t : threads) {
            if (t.isAlive()) {
                return false;
            }
        }
        return true;
    }
}
