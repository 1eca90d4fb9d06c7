package org.ucx4j;

import java.util.Optional;

/**
 * One received active message: its id, user header, size, sender and body.
 *
 * <p>Threading: immutable; the body future completes, and runs its continuations, where handlers run (the
 * progress thread; {@linkplain org.ucx4j the package's threading contract}). Ownership: the header is
 * a copy owned by this object; the body segment comes from the worker's {@link AmAllocator} and belongs
 * to whoever takes it from {@link #data()}.
 */
public final class AmMessage {
    private final int id;
    private final byte[] header;
    private final long length;
    private final boolean rendezvous;
    private final UcxEndpoint sender;
    private final UcxFuture<java.lang.foreign.MemorySegment> data;

    AmMessage(
            int id,
            byte[] header,
            long length,
            boolean rendezvous,
            UcxEndpoint sender,
            UcxFuture<java.lang.foreign.MemorySegment> data) {
        this.id = id;
        this.header = header;
        this.length = length;
        this.rendezvous = rendezvous;
        this.sender = sender;
        this.data = data;
    }

    /**
     * The message id (the handler's id).
     *
     * @return the id
     */
    public int id() {
        return id;
    }

    /**
     * The user header.
     *
     * @return a copy
     */
    public byte[] header() {
        return header.clone();
    }

    /**
     * The body size in bytes.
     *
     * @return the size
     */
    public long length() {
        return length;
    }

    /**
     * Whether the body arrives by rendezvous (fetched after the header) rather than eagerly with it.
     *
     * @return true for rendezvous
     */
    public boolean isRendezvous() {
        return rendezvous;
    }

    /**
     * The endpoint the message came from, when this worker has one to it (accepted or connected).
     *
     * @return the sender's endpoint, or empty
     */
    public Optional<UcxEndpoint> sender() {
        return Optional.ofNullable(sender);
    }

    /**
     * The body, in memory from the worker's allocator: already complete for eager messages, complete
     * once fetched for rendezvous ones (or failed, if the sender died first).
     *
     * @return the body's future
     */
    public UcxFuture<java.lang.foreign.MemorySegment> data() {
        return data;
    }

    @Override
    public String toString() {
        return "AmMessage[id=" + id + ", header=" + header.length + " B, length=" + length
                + (rendezvous ? ", rendezvous" : ", eager") + "]";
    }
}
