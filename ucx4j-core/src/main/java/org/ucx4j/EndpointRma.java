package org.ucx4j;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;
import org.ucx4j.internal.worker.Buffers;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;

/**
 * One endpoint's remote memory access: unpacking peers' remote keys, puts and gets, and destroying the
 * keys before the endpoint goes (UCX requires a key to be destroyed before the endpoint it was
 * unpacked on).
 *
 * <p>Threading: the key list is touched by the worker's lock holder only; the entry points are safe
 * from any thread.
 */
final class EndpointRma {
    /**
     * Zeroed bytes after a packed key handed to {@code ucp_ep_rkey_unpack}, which takes no length and
     * trusts the sizes inside the key: a 64-bit memory-domain map with a size byte per domain can claim
     * at most 64 * (1 + 255) bytes plus a small tail, so a corrupted size never reads past our buffer.
     */
    private static final int RKEY_UNPACK_SLACK = 64 * 256 + 1024;

    private final UcxEndpoint endpoint;
    private final NativeWorker rt;
    /** The remote keys unpacked on this endpoint and not yet destroyed (lock held). */
    private final List<RemoteKey> remoteKeys = new ArrayList<>();

    EndpointRma(UcxEndpoint endpoint, NativeWorker rt) {
        this.endpoint = endpoint;
        this.rt = rt;
    }

    RemoteKey unpackRemoteKey(byte[] remoteKey) {
        RemoteKeyFormat.Parsed parsed = RemoteKeyFormat.decode(remoteKey);
        endpoint.lifecycle().ensureOpen();
        return endpoint.worker().call("unpackRemoteKey", () -> unpackLocked(parsed));
    }

    private RemoteKey unpackLocked(RemoteKeyFormat.Parsed parsed) {
        endpoint.lifecycle().checkOpenLocked();
        byte[] packed = parsed.packedKey();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buffer = a.allocate(packed.length + RKEY_UNPACK_SLACK, 8);
            MemorySegment.copy(packed, 0, buffer, ValueLayout.JAVA_BYTE, 0, packed.length);
            MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            MemorySegment handle = endpoint.handle;
            int status = NativeCalls.callInt(() -> Ucp.epRkeyUnpack(handle, buffer, out));
            if (status != UcxStatus.OK.code()) {
                throw UcxException.of(
                        "ucp_ep_rkey_unpack",
                        status,
                        "a " + packed.length + "-byte packed key for a "
                                + parsed.length() + "-byte region, endpoint to " + endpoint.describePeer()
                                + " (corrupted, or packed by a process this endpoint does not lead to)");
            }
            RemoteKey key = new RemoteKey(endpoint, out.get(ValueLayout.ADDRESS, 0), parsed.base(), parsed.length());
            remoteKeys.add(key);
            return key;
        }
    }

    /** Starts a put ({@code put}) or a get into {@code local}. */
    UcxFuture<Void> start(boolean put, MemorySegment local, RemoteKey key, long remoteOffset) {
        Objects.requireNonNull(local, "local");
        Objects.requireNonNull(key, "key");
        if (key.endpoint() != endpoint) {
            throw new IllegalArgumentException("the remote key was unpacked on " + key.endpoint() + ", not on "
                    + endpoint + ": a key works only on its own endpoint");
        }
        long len = local.byteSize();
        key.checkAccess(remoteOffset, len);
        UcxFuture<Void> f = new UcxFuture<>();
        EndpointLifecycle lifecycle = endpoint.lifecycle();
        UcxException failed = lifecycle.failureOrNull();
        if (failed != null) {
            // The peer is gone (the endpoint may have closed itself since): say so, not just "closed".
            f.fail(failed);
            return f;
        }
        lifecycle.ensureOpen();
        key.ensureOpen();
        if (len == 0) {
            f.succeed(null);
            return f;
        }
        Operation op = f.track(rt, put ? OperationKind.PUT : OperationKind.GET, lifecycle, len);
        MemorySegment buffer = put ? Buffers.forSend(op, local) : Buffers.forReceive(op, local);
        long remote = key.address(remoteOffset);
        MemorySegment handle = endpoint.handle;
        rt.submit(op, () -> {
            UcxException failedNow = lifecycle.failureOrNull();
            if (failedNow != null) {
                rt.operations.failUnsubmitted(op, failedNow);
                return;
            }
            if (!lifecycle.admit(op)) {
                return;
            }
            if (!key.acquire()) {
                rt.operations.failUnsubmitted(
                        op, new IllegalStateException("remote key (region of " + key.size() + " bytes) is closed"));
                return;
            }
            f.whenComplete((v, e) -> rt.engine.execute(key::release));
            MemorySegment p = rt.operations.param(op, Upcalls.SEND, 0, 0);
            MemorySegment r;
            try {
                r = put
                        ? Ucp.putNbx(handle, buffer, len, remote, key.handle(), p)
                        : Ucp.getNbx(handle, buffer, len, remote, key.handle(), p);
            } catch (Throwable t) {
                rt.operations.failUnsubmitted(op, t);
                return;
            }
            rt.operations.started(op, r, null);
        });
        return f;
    }

    /** Asks every remote key of this endpoint to close; each is destroyed once idle. Lock held. */
    void closeAll() {
        for (RemoteKey key : new ArrayList<>(remoteKeys)) {
            key.requestClose();
        }
    }

    /** Lock held. */
    void destroyed(RemoteKey key) {
        remoteKeys.remove(key);
    }
}
