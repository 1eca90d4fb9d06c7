package org.ucx4j;

import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;

/**
 * A worker's UCX address: opaque bytes that let another worker connect to it without any listener or
 * IP address ({@link UcxWorker#connect(WorkerAddress)}). Ship it any way you like: as bytes, or as the
 * printable form of {@link #toString()} (URL-safe base64, no padding).
 *
 * <p>Threading: immutable. Ownership: holds its own copy of the bytes.
 */
public final class WorkerAddress {
    private final byte[] bytes;

    private WorkerAddress(byte[] bytes) {
        this.bytes = bytes;
    }

    /**
     * Wraps address bytes obtained from {@link #bytes()} (a copy is kept).
     *
     * @param bytes the address
     * @return the address
     * @throws IllegalArgumentException when empty
     */
    public static WorkerAddress of(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length == 0) {
            throw new IllegalArgumentException("empty worker address");
        }
        return new WorkerAddress(bytes.clone());
    }

    /**
     * Parses the printable form ({@link #toString()}).
     *
     * @param text URL-safe base64, as {@link #toString()} writes it
     * @return the address
     * @throws IllegalArgumentException when the text is not such base64 (the message says so)
     */
    public static WorkerAddress parse(String text) {
        Objects.requireNonNull(text, "text");
        try {
            return of(Base64.getUrlDecoder().decode(text.trim()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "not a ucx4j worker address (URL-safe base64 expected): '"
                            + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "'",
                    e);
        }
    }

    /**
     * The address bytes.
     *
     * @return a copy
     */
    public byte[] bytes() {
        return bytes.clone();
    }

    /**
     * The address length in bytes.
     *
     * @return the length
     */
    public int length() {
        return bytes.length;
    }

    byte[] rawBytes() {
        return bytes;
    }

    /** The printable form: URL-safe base64 without padding. */
    @Override
    public String toString() {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WorkerAddress w && Arrays.equals(bytes, w.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }
}
