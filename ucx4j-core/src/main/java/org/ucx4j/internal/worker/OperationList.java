package org.ucx4j.internal.worker;

import java.util.ArrayList;
import java.util.List;

/**
 * The in-flight operations of one endpoint, as an intrusive doubly linked list (no allocation per
 * operation). Lock holder only.
 */
public final class OperationList {
    private Operation head;
    /** Run once when the list next becomes empty; see {@link #whenEmpty}. */
    private Runnable whenEmpty;

    void link(Operation op) {
        op.ownerNext = head;
        if (head != null) {
            head.ownerPrev = op;
        }
        head = op;
    }

    void unlink(Operation op) {
        if (op.ownerPrev != null) {
            op.ownerPrev.ownerNext = op.ownerNext;
        } else if (head == op) {
            head = op.ownerNext;
        }
        if (op.ownerNext != null) {
            op.ownerNext.ownerPrev = op.ownerPrev;
        }
        op.ownerPrev = null;
        op.ownerNext = null;
        if (head == null && whenEmpty != null) {
            Runnable r = whenEmpty;
            whenEmpty = null;
            r.run();
        }
    }

    /** Whether no operation is in flight. */
    public boolean isEmpty() {
        return head == null;
    }

    /**
     * Runs {@code task} once, when the last operation in flight leaves the list (at once if none is): on
     * the thread that completes it, which may be inside a UCX callback, so the task should only schedule
     * work. Replaces a task set earlier and not yet run; {@code null} clears it.
     *
     * @param task what to run
     */
    public void whenEmpty(Runnable task) {
        if (task != null && head == null) {
            whenEmpty = null;
            task.run();
        } else {
            whenEmpty = task;
        }
    }

    /** A snapshot, safe to iterate while operations complete. */
    public List<Operation> snapshot() {
        List<Operation> out = new ArrayList<>();
        for (Operation op = head; op != null; op = op.ownerNext) {
            out.add(op);
        }
        return out;
    }
}
