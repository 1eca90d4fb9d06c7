package org.ucx4j;

/**
 * How an endpoint closes.
 *
 * <p>Threading: an immutable constant.
 */
public enum CloseMode {
    /** Complete what was sent, tell the peer, then release: the graceful default. */
    FLUSH,
    /** Release at once without waiting for the peer; pending operations complete as canceled. */
    FORCE
}
