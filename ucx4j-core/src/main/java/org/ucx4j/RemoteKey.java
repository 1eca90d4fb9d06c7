package org.ucx4j;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.worker.NativeWorker;

/**
 * A peer's memory region as seen through one endpoint ({@code ucp_rkey_h} plus the region's base address
 * and length): the target of {@link UcxEndpoint#putAsync put} and {@link UcxEndpoint#getAsync get}.
 *
 * <p>Made by {@link UcxEndpoint#unpackRemoteKey(byte[])} from the bytes of
 * {@link MemoryRegion#packRemoteKey()}. Those bytes are ucx4j's versioned frame around UCX's packed key,
 * integers little-endian: magic {@code "UCXRK"} (5 bytes), version {@code 1} (1 byte), the region's base
 * address (u64), its length (u64), the packed key's length n (u32), a CRC-32C of the 26 bytes before it
 * and the packed key (u32), then the packed key, which must fill the rest exactly (n bytes). Frames that
 * are truncated, inconsistent or damaged (checksum mismatch) are rejected with
 * {@link IllegalArgumentException} before UCX sees them: UCX 1.13 can crash on a damaged packed key.
 * A packed key that passes these checks and that UCX still rejects gives a {@link UcxException}. The
 * checksum guards against accident, not attack: UCX has no authentication.
 *
 * <p>Ownership: owned by its endpoint, usable only on it, and destroyed when the endpoint closes (before
 * UCX closes the endpoint). {@link #close()} is idempotent and may come earlier; the native key is then
 * destroyed as soon as no put or get that uses it is in flight.
 *
 * <p>Threading: safe from any thread; the native key is only touched with the worker's progress lock.
 */
public final class RemoteKey implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteKey.class);

    private final UcxEndpoint endpoint;
    private final MemorySegment handle;
    private final long base;
    private final long length;
    private final AtomicBoolean closeCalled = new AtomicBoolean();
    // Guarded by the worker's progress lock.
    private int inFlight;
    private boolean closeRequested;
    private volatile boolean destroyed;

    RemoteKey(UcxEndpoint endpoint, MemorySegment handle, long base, long length) {
        this.endpoint = endpoint;
        this.handle = handle;
        this.base = base;
        this.length = length;
    }

    /**
     * The remote region's length in bytes: valid offsets for an access of {@code n} bytes are
     * {@code 0 .. size() - n}.
     *
     * @return the length the owner packed
     */
    public long size() {
        return length;
    }

    /**
     * The endpoint this key was unpacked on (the only one it works with).
     *
     * @return the endpoint
     */
    public UcxEndpoint endpoint() {
        return endpoint;
    }

    /**
     * Whether the key can still be used: not closed, and its endpoint not closed.
     *
     * @return true while usable
     */
    public boolean isOpen() {
        return !closeCalled.get() && !destroyed;
    }

    /** The remote address of {@code offset}, after {@link #checkAccess}. */
    long address(long offset) {
        return base + offset;
    }

    MemorySegment handle() {
        return handle;
    }

    /**
     * Refuses an access outside {@code [0, size())} before UCX sees it.
     *
     * @throws IndexOutOfBoundsException naming the offset, the length and the region's size
     */
    void checkAccess(long offset, long accessLength) {
        if (offset < 0 || accessLength < 0 || accessLength > length || offset > length - accessLength) {
            throw new IndexOutOfBoundsException("remote access out of bounds: offset " + offset + ", length "
                    + accessLength + ", remote region of " + length + " bytes");
        }
    }

    void ensureOpen() {
        if (!isOpen()) {
            throw new IllegalStateException("remote key (region of " + length + " bytes) is closed");
        }
    }

    /** An operation starts using the key. Lock held; false when the key is being closed. */
    boolean acquire() {
        if (closeRequested || destroyed) {
            return false;
        }
        inFlight++;
        return true;
    }

    /** An operation that used the key finished. Lock held. */
    void release() {
        inFlight--;
        destroyIfIdle();
    }

    /** Close asked for (by the user or the endpoint's close). Lock held. */
    void requestClose() {
        closeRequested = true;
        destroyIfIdle();
    }

    private void destroyIfIdle() {
        if (!closeRequested || inFlight > 0 || destroyed) {
            return;
        }
        NativeWorker rt = endpoint.runtime();
        if (rt.inUpcall()) {
            // Inside a completion callback UCX may still hold the request that used the key.
            rt.engine.later(this::destroyIfIdle);
            return;
        }
        destroyed = true;
        endpoint.remoteKeyDestroyed(this);
        if (!rt.engine.isRunning()) {
            // The worker is being destroyed and takes its keys' memory with it.
            LOG.debug(
                    "remote key not destroyed: worker {} is shutting down",
                    endpoint.worker().name());
            return;
        }
        NativeCalls.invoke(() -> {
            Ucp.rkeyDestroy(handle);
        });
    }

    /**
     * Destroys the native key ({@code ucp_rkey_destroy}) once no put or get using it is in flight; puts
     * and gets started afterwards are refused. Idempotent, never blocks, safe from any thread.
     */
    @Override
    public void close() {
        if (!closeCalled.compareAndSet(false, true) || destroyed) {
            return;
        }
        try {
            endpoint.runtime().engine.execute(this::requestClose);
        } catch (IllegalStateException workerClosed) {
            // The worker is closed or closing: its destruction ends what the key was used with.
        }
    }

    @Override
    public String toString() {
        return "RemoteKey[" + length + " bytes via " + endpoint.describePeer() + (isOpen() ? "" : ", closed") + "]";
    }
}
