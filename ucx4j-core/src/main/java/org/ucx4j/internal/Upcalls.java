package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.UcxStatus;

/**
 * The upcall stubs, one per C callback signature, created once for the JVM. UCX hands back the
 * {@code void *} user data we gave it; we put a worker id in its upper 32 bits and an operation,
 * endpoint or listener id in the lower 32, never an object pointer (a Java object cannot be pinned, and a
 * stale pointer would be memory corruption; a stale id is only a lookup miss).
 *
 * <p>Why the table of targets is static: a stub is created once per signature for the JVM and lives
 * as long as the loaded library (a stub per worker would cost an upcall stub and its code per worker,
 * and still need a way from the C side back to Java). What the C side hands back is a number, so the
 * numbers must resolve in one table; each worker registers when created and unregisters when
 * destroyed, so the table holds only workers the user holds.
 *
 * <p>Threading: registration is synchronized; dispatch reads a volatile array. The stubs never throw:
 * a failure goes to the worker's {@link UpcallTarget#onUpcallFailure} or, failing that, to the log.
 */
public final class Upcalls {
    private static final Logger LOG = LoggerFactory.getLogger(Upcalls.class);

    private static volatile UpcallTarget[] targets = new UpcallTarget[16];

    /*
     * The three completion callbacks run once per message: their pointers (request, user data, receive
     * info) arrive as 64-bit words, not ADDRESS, because the stub would allocate a MemorySegment for each
     * only to have its address read. A pointer and a long travel in the same register on the 64-bit
     * platforms UCX and ucx4j support (x86-64, aarch64).
     */

    /** {@code void (*)(void *request, ucs_status_t status, void *user_data)}: sends, flushes, closes. */
    public static final MemorySegment SEND = NativeLinker.upcall(
            Upcalls.class,
            "send",
            MethodType.methodType(void.class, long.class, byte.class, long.class),
            FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_BYTE, JAVA_LONG));

    /** {@code void (*)(void *request, ucs_status_t, const ucp_tag_recv_info_t *, void *user_data)}. */
    public static final MemorySegment TAG_RECV = NativeLinker.upcall(
            Upcalls.class,
            "tagRecv",
            MethodType.methodType(void.class, long.class, byte.class, long.class, long.class),
            FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_BYTE, JAVA_LONG, JAVA_LONG));

    /** {@code void (*)(void *request, ucs_status_t, size_t length, void *user_data)}: stream and AM data. */
    public static final MemorySegment STREAM_RECV = NativeLinker.upcall(
            Upcalls.class,
            "streamRecv",
            MethodType.methodType(void.class, long.class, byte.class, long.class, long.class),
            FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_BYTE, JAVA_LONG, JAVA_LONG));

    /**
     * All of memory, for reading a {@code ucp_tag_recv_info_t} UCX passes by address (no view object per
     * message). Read only at addresses UCX just handed over.
     */
    private static final MemorySegment ALL_MEMORY = NativeLinker.view(MemorySegment.NULL, Long.MAX_VALUE);

    private static final long TAG_RECV_INFO_TAG = Structs.offset(Structs.UCP_TAG_RECV_INFO, "sender_tag");
    private static final long TAG_RECV_INFO_LENGTH = Structs.offset(Structs.UCP_TAG_RECV_INFO, "length");

    /** {@code void (*)(void *arg, ucp_ep_h ep, ucs_status_t status)}. */
    public static final MemorySegment EP_ERROR = NativeLinker.upcall(
            Upcalls.class,
            "endpointError",
            MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class, byte.class),
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_BYTE));

    /** {@code void (*)(ucp_conn_request_h conn_request, void *arg)}. */
    public static final MemorySegment CONN_REQUEST = NativeLinker.upcall(
            Upcalls.class,
            "connectionRequest",
            MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class),
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));

    /**
     * {@code ucs_status_t (*)(void *arg, const void *header, size_t header_length, void *data,
     * size_t length, const ucp_am_recv_param_t *param)}.
     */
    public static final MemorySegment AM_RECV = NativeLinker.upcall(
            Upcalls.class,
            "activeMessage",
            MethodType.methodType(
                    byte.class,
                    MemorySegment.class,
                    MemorySegment.class,
                    long.class,
                    MemorySegment.class,
                    long.class,
                    MemorySegment.class),
            FunctionDescriptor.of(JAVA_BYTE, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));

    private Upcalls() {}

    /**
     * Registers a worker and returns its id, the upper half of every user-data word it passes to UCX.
     */
    public static synchronized int register(UpcallTarget target) {
        UpcallTarget[] current = targets;
        for (int i = 1; i < current.length; i++) {
            if (current[i] == null) {
                UpcallTarget[] next = current.clone();
                next[i] = target;
                targets = next;
                return i;
            }
        }
        UpcallTarget[] next = java.util.Arrays.copyOf(current, current.length * 2);
        int id = current.length;
        next[id] = target;
        targets = next;
        return id;
    }

    /** Forgets a worker once it is destroyed (UCX will not call back for it again). */
    public static synchronized void unregister(int workerId) {
        UpcallTarget[] next = targets.clone();
        next[workerId] = null;
        targets = next;
    }

    /** Packs a worker id and an object id into the user-data word. */
    public static MemorySegment userData(int workerId, int objectId) {
        return MemorySegment.ofAddress(word(workerId, objectId));
    }

    /** Like {@link #userData} as the word itself (stored with a {@code JAVA_LONG} layout: no segment). */
    public static long word(int workerId, int objectId) {
        return ((long) workerId << 32) | (objectId & 0xFFFF_FFFFL);
    }

    private static UpcallTarget target(long word) {
        int workerId = (int) (word >>> 32);
        UpcallTarget[] t = targets;
        return workerId > 0 && workerId < t.length ? t[workerId] : null;
    }

    private static void miss(String what, long word) {
        LOG.warn("UCX callback {} for an unknown worker (user data 0x{}); ignored", what, Long.toHexString(word));
    }

    /**
     * A request callback for an unknown worker: nothing will ever free its request, so it is handed back
     * to UCX here (the callback runs inside a UCX call on the worker that owns it).
     */
    private static void missRequest(String what, long word, long request) {
        miss(what, word);
        if (request != 0) {
            NativeCalls.invoke(() -> {
                Ucp.requestFree(request);
            });
        }
    }

    static void send(long request, byte status, long userData) {
        long word = userData;
        UpcallTarget t = target(word);
        if (t == null) {
            missRequest("send", word, request);
            return;
        }
        try {
            t.onSendComplete((int) word, request, status);
        } catch (Throwable e) {
            report(t, "send completion", e);
        }
    }

    static void tagRecv(long request, byte status, long info, long userData) {
        long word = userData;
        UpcallTarget t = target(word);
        if (t == null) {
            missRequest("tag receive", word, request);
            return;
        }
        try {
            long senderTag = 0;
            long length = 0;
            if (info != 0) {
                senderTag = ALL_MEMORY.get(JAVA_LONG, info + TAG_RECV_INFO_TAG);
                length = ALL_MEMORY.get(JAVA_LONG, info + TAG_RECV_INFO_LENGTH);
            }
            t.onTagRecvComplete((int) word, request, status, senderTag, length);
        } catch (Throwable e) {
            report(t, "tag receive completion", e);
        }
    }

    static void streamRecv(long request, byte status, long length, long userData) {
        long word = userData;
        UpcallTarget t = target(word);
        if (t == null) {
            missRequest("stream receive", word, request);
            return;
        }
        try {
            t.onStreamRecvComplete((int) word, request, status, length);
        } catch (Throwable e) {
            report(t, "stream receive completion", e);
        }
    }

    static void endpointError(MemorySegment arg, MemorySegment ep, byte status) {
        long word = arg.address();
        UpcallTarget t = target(word);
        if (t == null) {
            miss("endpoint error", word);
            return;
        }
        try {
            t.onEndpointError((int) word, ep, status);
        } catch (Throwable e) {
            report(t, "endpoint error handling", e);
        }
    }

    static void connectionRequest(MemorySegment connRequest, MemorySegment arg) {
        long word = arg.address();
        UpcallTarget t = target(word);
        if (t == null) {
            miss("connection request", word);
            return;
        }
        try {
            t.onConnectionRequest((int) word, connRequest);
        } catch (Throwable e) {
            report(t, "connection request handling", e);
        }
    }

    static byte activeMessage(
            MemorySegment arg,
            MemorySegment header,
            long headerLength,
            MemorySegment data,
            long length,
            MemorySegment param) {
        long word = arg.address();
        UpcallTarget t = target(word);
        if (t == null) {
            miss("active message", word);
            return (byte) UcxStatus.OK.code();
        }
        try {
            return t.onActiveMessage((int) word, header, headerLength, data, length, param);
        } catch (Throwable e) {
            report(t, "active message", e);
            return (byte) UcxStatus.OK.code();
        }
    }

    private static void report(UpcallTarget t, String what, Throwable e) {
        try {
            t.onUpcallFailure(what, e);
        } catch (Throwable again) {
            LOG.error("failure in {} (and in reporting it)", what, e);
        }
    }
}
