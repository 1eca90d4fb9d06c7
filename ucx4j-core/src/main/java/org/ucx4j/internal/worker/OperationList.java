package org.ucx4j.internal.worker;

import java.util.ArrayList;
import java.util.List;

/**
 * The in-flight operations of one endpoint, as an intrusive doubly linked list (no allocation per
 * operation). Lock holder only.
 */
public final class OperationList {
    private Operation head;

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
