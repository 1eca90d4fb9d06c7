package org.ucx4j.cuda;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A buffer held by a {@link SpillStore}: its bytes are on the device, in pinned host memory or on disk, as
 * the store decides; {@link #acquire()} brings them back to the device and keeps them there until the
 * returned {@link Access} is closed.
 *
 * <p>Ownership: the store owns the memory; the caller owns this handle and closes it to free the buffer in
 * whichever tier it is. Closing the store frees every buffer.
 *
 * <p>Threading: safe from any thread. Several threads may hold accesses to one buffer at once (the buffer
 * stays on the device until the last is closed); reading and writing its device memory concurrently is
 * theirs to coordinate.
 */
public final class SpillableBuffer implements AutoCloseable {
    private final SpillStore store;
    private final long id;
    private final long size;

    // Guarded by the store's lock.
    SpillTier tier = SpillTier.DEVICE;
    SpillMemory.Block device;
    SpillMemory.Block host;
    Path file;
    int accesses;
    boolean closed;
    // A thread is moving the bytes between tiers (with the store's lock released): no spill candidate, and
    // acquire and close wait for the move to end.
    boolean moving;

    SpillableBuffer(SpillStore store, long id, long size, SpillMemory.Block device) {
        this.store = store;
        this.id = id;
        this.size = size;
        this.device = device;
    }

    /**
     * The buffer's number in its store, as the spill log names it.
     *
     * @return a number unique within the store
     */
    public long id() {
        return id;
    }

    /**
     * The size.
     *
     * @return bytes
     */
    public long byteSize() {
        return size;
    }

    /**
     * Where the bytes are now; another thread's access or spill may change it at any moment. A buffer being
     * moved is where it is moving from, until the move ends; this does not wait for it.
     *
     * @return the tier
     * @throws IllegalStateException when the buffer is closed
     */
    public SpillTier tier() {
        return store.tierOf(this);
    }

    /**
     * Brings the buffer to the device (spilling others first when the device limit asks for it, and again if
     * the pool has no room) and keeps it there until the access is closed: an acquired buffer is never
     * spilled. Use it in a try-with-resources block.
     *
     * @return the access, owned by the caller
     * @throws IllegalStateException when the buffer or the store is closed
     * @throws CudaException when the device has no room even after spilling every buffer not in use
     * @throws java.io.UncheckedIOException when a spill needed to make room failed (a full disk, a missing
     *     directory) or the buffer cannot be read back from disk; nothing moved and nothing is lost
     */
    public Access acquire() {
        return store.acquire(this);
    }

    /**
     * Frees the buffer in whichever tier it is (its file too). Idempotent. Waits for a move of this buffer in
     * progress (another thread spilling it), never for moves of other buffers.
     *
     * @throws IllegalStateException while an {@link Access} is open
     */
    @Override
    public void close() {
        store.free(this);
    }

    @Override
    public String toString() {
        return "SpillableBuffer[#" + id + ", " + size + " bytes]";
    }

    /**
     * The buffer held on the device: while any access is open, the store does not spill it.
     *
     * <p>Ownership: the caller closes it, once per {@link SpillableBuffer#acquire()}. The segment is the
     * buffer's device memory; it must not be used after the access is closed (once the buffer is spilled,
     * the segment is closed and using it fails with "already closed"). Work on the segment that the JVM does
     * not see must be finished before the access is closed: kernels and asynchronous copies on any CUDA
     * stream (synchronize the stream first; the store's own copies are {@code cuMemcpy}, on the legacy
     * default stream) and UCX requests that send from or receive into it (wait for them to complete).
     * Otherwise the store may spill the buffer and hand its memory to another buffer while that work still
     * writes into it. Closing the store does not free a buffer with an access open: it is freed when its
     * last access closes.
     *
     * <p>Threading: safe from any thread; closing twice is harmless.
     */
    public static final class Access implements AutoCloseable {
        private final SpillableBuffer buffer;
        private final MemorySegment segment;
        private final AtomicBoolean closed = new AtomicBoolean();

        Access(SpillableBuffer buffer, MemorySegment segment) {
            this.buffer = buffer;
            this.segment = segment;
        }

        /**
         * The buffer's device memory.
         *
         * @return a segment of kind CUDA (device addresses; copy with {@link Cuda#copy}, hand to ucx4j) of
         *     exactly {@link SpillableBuffer#byteSize()} bytes
         */
        public MemorySegment segment() {
            return segment;
        }

        /**
         * The buffer this access holds.
         *
         * @return the buffer
         */
        public SpillableBuffer buffer() {
            return buffer;
        }

        /**
         * Lets the store spill the buffer again once no other access holds it (or frees it, when the store
         * closed meanwhile and this was its last access). Idempotent. Does not wait for moves in progress.
         */
        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                buffer.store.release(buffer);
            }
        }
    }
}
