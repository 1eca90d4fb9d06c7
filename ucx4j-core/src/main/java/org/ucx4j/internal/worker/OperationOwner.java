package org.ucx4j.internal.worker;

/**
 * What an endpoint offers the operations that run on it: the gate at submission, the list of its
 * in-flight operations (to fail them all when it fails or closes) and a name for messages.
 *
 * <p>Why an interface: the endpoint is public API in {@code org.ucx4j}; it implements this with a
 * private object, so the worker machinery here needs no access to its package-private members.
 */
public interface OperationOwner {
    /**
     * Checks, with the progress lock held, that an operation may start; fails it (through
     * {@link OperationTable#failUnsubmitted}) and returns false otherwise.
     */
    boolean admit(Operation op);

    /** The owner's in-flight operations. Lock holder only. */
    OperationList operations();

    /** The peer, for error messages. */
    String describePeer();
}
