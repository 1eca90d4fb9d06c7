package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.NativeLinker;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;

/**
 * A worker's active-message receive side: handlers by id, the allocator, and the routing of the simple
 * per-endpoint channel ({@link UcxEndpoint#amRecvAsync()}). Everything here runs with the worker's
 * progress lock held.
 *
 * <p>Why the body is fetched inside the callback: UCX passes rendezvous data as a descriptor that must
 * be received or released; receiving it at once into allocator memory means no descriptor can leak,
 * whatever the user's handler does.
 */
final class ActiveMessages {
    private static final Logger LOG = LoggerFactory.getLogger(ActiveMessages.class);

    /**
     * The id of the simple channel: UCXX's {@code am_send}/{@code am_recv} use AM id 0 with the header of
     * {@link SimpleAmHeader}; user ids are {@value #MIN_USER_ID} .. {@value #MAX_USER_ID}.
     */
    static final int SIMPLE_ID = 0;
    /** The smallest id a user may register. */
    static final int MIN_USER_ID = 1;
    /** The largest id a user may register. */
    static final int MAX_USER_ID = 0xFFFF;

    static final long HANDLER_PARAM_FIELD_ID = 1;
    static final long HANDLER_PARAM_FIELD_FLAGS = 1 << 1;
    static final long HANDLER_PARAM_FIELD_CB = 1 << 2;
    static final long HANDLER_PARAM_FIELD_ARG = 1 << 3;
    static final int AM_FLAG_WHOLE_MSG = 1;
    static final long RECV_ATTR_FIELD_REPLY_EP = 1;
    static final long RECV_ATTR_FLAG_RNDV = 1L << 17;
    static final int SEND_FLAG_REPLY = 1;

    private final NativeWorker rt;
    private final Map<Integer, AmHandler> handlers = new HashMap<>();
    private final Map<Long, UcxEndpoint> endpointsByHandle = new HashMap<>();
    private volatile AmAllocator allocator = AmAllocator.host();
    /** Allocators of the simple channel's non-host kinds; host bodies use {@link #allocator}. */
    private final java.util.Map<MemoryKind, AmAllocator> kindAllocators =
            new java.util.concurrent.ConcurrentHashMap<>();

    ActiveMessages(NativeWorker rt) {
        this.rt = rt;
    }

    void allocator(MemoryKind kind, AmAllocator a) {
        Objects.requireNonNull(a, "allocator");
        if (a.kind() != kind) {
            throw new IllegalArgumentException("an allocator of " + a.kind() + " memory registered for " + kind);
        }
        if (kind == MemoryKind.HOST) {
            allocator = a;
        } else {
            kindAllocators.put(kind, a);
        }
    }

    void allocator(AmAllocator a) {
        this.allocator = Objects.requireNonNull(a, "allocator");
    }

    void endpointOpened(UcxEndpoint ep) {
        endpointsByHandle.put(ep.handle.address(), ep);
    }

    void endpointClosed(UcxEndpoint ep) {
        endpointsByHandle.remove(ep.handle.address(), ep);
    }

    /** Registers (or with null, removes) the UCX receive callback for an id. Lock held. */
    void register(int id, AmHandler handler) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(Structs.UCP_AM_HANDLER_PARAM);
            p.set(
                    JAVA_LONG,
                    0,
                    HANDLER_PARAM_FIELD_ID
                            | HANDLER_PARAM_FIELD_FLAGS
                            | HANDLER_PARAM_FIELD_CB
                            | HANDLER_PARAM_FIELD_ARG);
            p.set(JAVA_INT, Structs.offset(Structs.UCP_AM_HANDLER_PARAM, "id"), id);
            p.set(JAVA_INT, Structs.offset(Structs.UCP_AM_HANDLER_PARAM, "flags"), AM_FLAG_WHOLE_MSG);
            p.set(
                    ADDRESS,
                    Structs.offset(Structs.UCP_AM_HANDLER_PARAM, "cb"),
                    handler == null && id != SIMPLE_ID ? MemorySegment.NULL : Upcalls.AM_RECV);
            p.set(ADDRESS, Structs.offset(Structs.UCP_AM_HANDLER_PARAM, "arg"), Upcalls.userData(rt.id, id));
            int status = NativeCalls.callInt(() -> Ucp.workerSetAmRecvHandler(rt.handle, p));
            if (status != UcxStatus.OK.code()) {
                throw UcxException.of("ucp_worker_set_am_recv_handler", status, "active message id " + id);
            }
        }
        if (handler == null) {
            handlers.remove(id);
        } else {
            handlers.put(id, handler);
        }
    }

    /** The UCX callback: copies or fetches the body, then hands the message over. Lock held. */
    byte onMessage(
            int id, MemorySegment header, long headerLength, MemorySegment data, long length, MemorySegment param) {
        MemorySegment recvParam = NativeLinker.view(param, Structs.UCP_AM_RECV_PARAM.byteSize());
        long attrs = recvParam.get(JAVA_LONG, 0);
        UcxEndpoint sender = null;
        if ((attrs & RECV_ATTR_FIELD_REPLY_EP) != 0) {
            sender = endpointsByHandle.get(recvParam.get(ADDRESS, 8).address());
        }
        boolean rendezvous = (attrs & RECV_ATTR_FLAG_RNDV) != 0;
        byte[] hdr = headerLength == 0
                ? new byte[0]
                : NativeLinker.view(header, headerLength).toArray(JAVA_BYTE);
        UcxFuture<MemorySegment> body = new UcxFuture<>();
        MemorySegment dst = null;
        AmAllocator chosen = allocator;
        try {
            if (id == SIMPLE_ID) {
                chosen = simpleChannelAllocator(SimpleAmHeader.decode(hdr));
            }
            MemorySegment given = chosen.allocate(id, hdr.length == 0 ? hdr : hdr.clone(), length);
            if (given == null || !given.isNative() || given.byteSize() < length) {
                throw new IllegalStateException("the allocator returned " + given + " for " + length + " bytes");
            }
            dst = given; // only memory that passed the check is ever handed to UCX
        } catch (Throwable t) { // Errors too: the rendezvous data must be released and the receiver told
            // The message is delivered with a failed body: its receiver learns why, nothing waits forever.
            LOG.error("active message allocator failed for {} bytes (id {})", length, id, t);
            if (rendezvous) {
                NativeCalls.invoke(() -> {
                    Ucp.amDataRelease(rt.handle, data);
                });
            }
            body.fail(new IllegalStateException(
                    "no memory for an active message of " + length + " bytes (id " + id + "): " + t.getMessage(), t));
        }
        byte status;
        if (dst == null) {
            status = (byte) UcxStatus.OK.code();
        } else if (rendezvous) {
            fetch(data, dst, length, sender, body);
            status = (byte) UcxStatus.INPROGRESS.code();
        } else {
            try {
                if (length > 0) {
                    chosen.copyEager(dst.asSlice(0, length), NativeLinker.view(data, length));
                }
                body.succeed(dst.asSlice(0, length));
            } catch (RuntimeException e) {
                // The receiver learns of it through the body's future (a device copy can fail).
                body.fail(e);
            }
            status = (byte) UcxStatus.OK.code();
        }
        AmMessage message = new AmMessage(id, hdr, length, rendezvous, sender, body);
        if (id == SIMPLE_ID) {
            if (sender == null) {
                LOG.warn(
                        "simple active message of {} bytes from an endpoint this worker does not know; dropped",
                        length);
            } else {
                sender.deliverSimple(message);
            }
        } else {
            AmHandler handler = handlers.get(id);
            if (handler == null) {
                LOG.warn("active message id {} has no handler; dropped", id);
            } else {
                try {
                    handler.onMessage(message);
                } catch (Throwable t) {
                    LOG.error("active message handler for id {} failed on {}", id, message, t);
                }
            }
        }
        return status;
    }

    /**
     * The allocator for a simple-channel body: the one for the memory kind the sender's header names;
     * without one, host memory if the sender allows it (UCXX's default policy), else a failure that the
     * receiver is given.
     */
    private AmAllocator simpleChannelAllocator(SimpleAmHeader header) {
        if (header.receiverCallback()) {
            throw new IllegalStateException(
                    "a simple active message for a UCXX receiver callback (ucx4j has none; use am_send without one)");
        }
        MemoryKind kind = header.memoryKind();
        if (kind == MemoryKind.HOST) {
            return allocator;
        }
        AmAllocator forKind = kind == null ? null : kindAllocators.get(kind);
        if (forKind != null) {
            return forKind;
        }
        if (!header.strictMemoryType()) {
            return allocator;
        }
        throw new IllegalStateException("no active-message allocator for "
                + (kind != null ? kind.toString() : "UCX memory type " + header.ucsMemoryType())
                + " memory registered");
    }

    private void fetch(
            MemorySegment desc, MemorySegment dst, long length, UcxEndpoint sender, UcxFuture<MemorySegment> body) {
        UcxFuture<Long> received = new UcxFuture<>();
        Operation op = received.track(rt, OperationKind.AM_RECV_DATA, UcxEndpoint.ownerOf(sender), length);
        MemorySegment p = rt.operations.param(op, Upcalls.STREAM_RECV, 0, 0);
        MemorySegment target = MemorySegment.ofAddress(dst.address());
        MemorySegment r;
        try {
            r = Ucp.amRecvDataNbx(rt.handle, desc, target, length, p);
        } catch (Throwable t) {
            rt.operations.failUnsubmitted(op, t);
            body.fail(t);
            return;
        }
        body.cancelWith(op::cancel); // canceling the body cancels its fetch, through UCX
        received.whenComplete((n, e) -> {
            if (e != null) {
                body.fail(e);
            } else {
                body.succeed(dst.asSlice(0, length));
            }
        });
        rt.operations.started(op, r, length);
    }
}
