package org.ucx4j.comm.internal;

/**
 * Carries handshake records, each whole, before a comm exists. Blocking: the handshake runs on a
 * thread of its own, and a watchdog closes the connection at the deadline, which must make a blocked
 * {@link #receive()} fail.
 */
interface HandshakeChannel {
    /** Largest record either side accepts (a UCX worker address can reach tens of KiB). */
    int MAX_RECORD = 72 * 1024;

    void send(byte[] record) throws Exception;

    /** The next record; at most {@link #MAX_RECORD} bytes or a protocol error, never a larger allocation. */
    byte[] receive() throws Exception;
}
