package org.ucx4j.cluster;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.HexFormat;

/**
 * The rendezvous protocol between {@code ucx4j launch} ({@link RendezvousServer}) and its workers
 * ({@link Cluster}), over one TCP connection per worker. Big-endian ({@link java.io.DataOutputStream}).
 *
 * <pre>
 * worker -> launcher  hello: MAGIC (8 bytes), token (32 bytes), rank (int)
 * launcher -> worker  ack:   OK (int), size (int)          or  ERROR (int), message (UTF)
 * worker -> launcher  value: length (int, 0..MAX_VALUE), bytes       (one per collective round)
 * launcher -> worker  round: OK (int), n (int), n x (length (int), bytes)  or  ERROR (int), message (UTF)
 * </pre>
 *
 * <p>A worker closing its connection leaves the cluster; the launcher then ends every other worker's
 * pending and later rounds with an error, since they can no longer complete.
 *
 * <p>Threading: stateless.
 */
final class RendezvousWire {
    static final byte[] MAGIC = {'U', 'C', 'X', '4', 'J', 'R', 'V', '1'};
    static final int TOKEN_BYTES = 32;
    static final int OK = 0;
    static final int ERROR = 1;
    /** The largest value one worker may contribute to a round. */
    static final int MAX_VALUE = 64 * 1024;
    /** The most workers one launcher serves. */
    static final int MAX_SIZE = 4096;

    private RendezvousWire() {}

    /** Decodes the token the launcher passes through the environment (64 hex digits). */
    static byte[] decodeToken(String hex) {
        if (hex == null || hex.length() != TOKEN_BYTES * 2) {
            throw new IllegalStateException(
                    Cluster.ENV_TOKEN + " must be " + TOKEN_BYTES * 2 + " hex digits (set by ucx4j launch)");
        }
        try {
            return HexFormat.of().parseHex(hex);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(Cluster.ENV_TOKEN + " is not hex (set by ucx4j launch)");
        }
    }

    /** Reads a length-prefixed value, refusing lengths outside {@code 0..max}. */
    static byte[] readValue(DataInputStream in, int max) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > max) {
            throw new IOException("rendezvous value of " + n + " bytes (at most " + max + ")");
        }
        return readBytes(in, n);
    }

    /** Reads exactly {@code n} bytes, or throws {@link EOFException}. */
    static byte[] readBytes(DataInputStream in, int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }
}
