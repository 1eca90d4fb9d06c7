package org.ucx4j;

/**
 * How an active message travels ({@code UCP_AM_SEND_FLAG_*}).
 *
 * <p>Threading: an immutable constant.
 */
public enum AmSendMode {
    /** UCX chooses by size (eager below the rendezvous threshold). */
    AUTO(0),
    /** Eager: the data travels with the header; the receiver copies it out. */
    EAGER(1 << 1),
    /** Rendezvous: the receiver fetches the data into memory from its allocator (zero-copy where possible). */
    RENDEZVOUS(1 << 2);

    private final int flag;

    AmSendMode(int flag) {
        this.flag = flag;
    }

    int flag() {
        return flag;
    }
}
