package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * Downcall handles for the UCP and UCS functions, bound once from the loaded library. Static finals, so
 * the JIT treats each handle as a constant on the hot path.
 *
 * <p>Signatures follow {@code ucp/api/ucp.h} (UCX 1.13). {@code ucs_status_t} is one signed byte (see
 * {@code status}); other C enums are {@code int}; {@code size_t}, {@code ucp_tag_t} and {@code uint64_t} are {@code long}; handles are
 * addresses. Loading this class fails (with the loader's explanation) when UCX is unavailable: callers go
 * through {@link UcxLibrary#require()} first.
 *
 * <p>Only tiny calls that never run callbacks are {@link Linker.Option#critical critical};
 * {@code ucp_worker_progress} never is, because it calls back into Java.
 */
public final class Ucp {
    private Ucp() {}

    private static final SymbolLookup LIB = UcxLibrary.require().lookup();

    private static MethodHandle fn(String name, FunctionDescriptor fd) {
        return NativeLinker.downcall(LIB, name, fd);
    }

    private static MethodHandle tiny(String name, FunctionDescriptor fd) {
        return NativeLinker.downcall(LIB, name, fd, Linker.Option.critical(false));
    }

    /**
     * {@code ucs_status_t} is a packed enum: one signed byte ({@code UCS_S_PACKED} in
     * {@code ucs/type/status.h}). Declaring it {@code int} would read undefined upper register bits.
     */
    private static FunctionDescriptor status(java.lang.foreign.MemoryLayout... args) {
        return FunctionDescriptor.of(JAVA_BYTE, args);
    }

    private static FunctionDescriptor statusPtr(java.lang.foreign.MemoryLayout... args) {
        return FunctionDescriptor.of(ADDRESS, args);
    }

    /**
     * A {@code ucs_status_ptr_t} returned as the 64-bit word it is (NULL, a status, or a request), for the
     * calls made once per message: an {@code ADDRESS} return makes the linker allocate a
     * {@code MemorySegment} on every call only to have its address read. A pointer and a {@code long}
     * travel in the same register on the 64-bit platforms UCX and ucx4j support (x86-64, aarch64). Most
     * of these calls take their data buffer as a word too (no segment per message for it);
     * {@code ucp_am_send_nbx} still takes it as an {@code ADDRESS}.
     */
    private static FunctionDescriptor statusWord(java.lang.foreign.MemoryLayout... args) {
        return FunctionDescriptor.of(JAVA_LONG, args);
    }

    // Library, configuration, context.
    public static final MethodHandle config_read = fn("ucp_config_read", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle config_modify = fn("ucp_config_modify", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle config_release = fn("ucp_config_release", FunctionDescriptor.ofVoid(ADDRESS));
    public static final MethodHandle config_print =
            fn("ucp_config_print", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
    public static final MethodHandle init_version =
            fn("ucp_init_version", status(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle cleanup = fn("ucp_cleanup", FunctionDescriptor.ofVoid(ADDRESS));
    public static final MethodHandle context_query = fn("ucp_context_query", status(ADDRESS, ADDRESS));
    public static final MethodHandle context_print_info =
            fn("ucp_context_print_info", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));

    // Worker.
    public static final MethodHandle worker_create = fn("ucp_worker_create", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle worker_destroy = fn("ucp_worker_destroy", FunctionDescriptor.ofVoid(ADDRESS));
    public static final MethodHandle worker_query = fn("ucp_worker_query", status(ADDRESS, ADDRESS));
    public static final MethodHandle worker_release_address =
            fn("ucp_worker_release_address", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    public static final MethodHandle worker_progress =
            fn("ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    public static final MethodHandle worker_get_efd = fn("ucp_worker_get_efd", status(ADDRESS, ADDRESS));
    public static final MethodHandle worker_arm = fn("ucp_worker_arm", status(ADDRESS));
    public static final MethodHandle worker_signal = tiny("ucp_worker_signal", status(ADDRESS));
    public static final MethodHandle worker_flush_nbx = fn("ucp_worker_flush_nbx", statusWord(ADDRESS, ADDRESS));
    public static final MethodHandle worker_print_info =
            fn("ucp_worker_print_info", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));

    // Listener and connection requests.
    public static final MethodHandle listener_create = fn("ucp_listener_create", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle listener_destroy = fn("ucp_listener_destroy", FunctionDescriptor.ofVoid(ADDRESS));
    public static final MethodHandle listener_query = fn("ucp_listener_query", status(ADDRESS, ADDRESS));
    public static final MethodHandle listener_reject = fn("ucp_listener_reject", status(ADDRESS, ADDRESS));
    public static final MethodHandle conn_request_query = fn("ucp_conn_request_query", status(ADDRESS, ADDRESS));

    // Endpoint.
    public static final MethodHandle ep_print_info =
            fn("ucp_ep_print_info", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    public static final MethodHandle ep_create = fn("ucp_ep_create", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle ep_close_nbx = fn("ucp_ep_close_nbx", statusPtr(ADDRESS, ADDRESS));
    public static final MethodHandle ep_flush_nbx = fn("ucp_ep_flush_nbx", statusPtr(ADDRESS, ADDRESS));

    // Tag and stream messages.
    public static final MethodHandle tag_send_nbx =
            fn("ucp_tag_send_nbx", statusWord(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
    public static final MethodHandle tag_recv_nbx =
            fn("ucp_tag_recv_nbx", statusWord(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS));
    public static final MethodHandle tag_probe_nb =
            fn("ucp_tag_probe_nb", statusPtr(ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS));
    /** {@code ucp_tag_msg_recv_nbx}: receives a message that {@code ucp_tag_probe_nb} removed (UCX 1.9+). */
    public static final MethodHandle tag_msg_recv_nbx =
            fn("ucp_tag_msg_recv_nbx", statusPtr(ADDRESS, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS));

    public static final MethodHandle stream_send_nbx =
            fn("ucp_stream_send_nbx", statusWord(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
    public static final MethodHandle stream_recv_nbx =
            fn("ucp_stream_recv_nbx", statusWord(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));

    // Active messages (UCX 1.10+).
    public static final MethodHandle worker_set_am_recv_handler =
            fn("ucp_worker_set_am_recv_handler", status(ADDRESS, ADDRESS));
    public static final MethodHandle am_send_nbx =
            fn("ucp_am_send_nbx", statusWord(ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS));
    public static final MethodHandle am_recv_data_nbx =
            fn("ucp_am_recv_data_nbx", statusPtr(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS));
    public static final MethodHandle am_data_release =
            fn("ucp_am_data_release", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));

    // Requests.
    // The request as a 64-bit word (see statusWord): ucx4j keeps requests as numbers.
    public static final MethodHandle request_cancel =
            fn("ucp_request_cancel", FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG));
    /** {@code ucp_request_query(request, attr)}; asked once per large receive that UCX did not finish at once. */
    public static final MethodHandle request_query = fn("ucp_request_query", status(JAVA_LONG, ADDRESS));

    public static final MethodHandle request_free = tiny("ucp_request_free", FunctionDescriptor.ofVoid(JAVA_LONG));

    // RMA: memory regions, remote keys, put/get, fence (all in UCX 1.13; *_nbx since 1.9).
    public static final MethodHandle mem_map = fn("ucp_mem_map", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle mem_unmap = fn("ucp_mem_unmap", status(ADDRESS, ADDRESS));
    public static final MethodHandle mem_query = fn("ucp_mem_query", status(ADDRESS, ADDRESS));
    public static final MethodHandle rkey_pack = fn("ucp_rkey_pack", status(ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle rkey_buffer_release =
            fn("ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(ADDRESS));
    public static final MethodHandle ep_rkey_unpack = fn("ucp_ep_rkey_unpack", status(ADDRESS, ADDRESS, ADDRESS));
    public static final MethodHandle rkey_destroy = fn("ucp_rkey_destroy", FunctionDescriptor.ofVoid(ADDRESS));
    public static final MethodHandle put_nbx =
            fn("ucp_put_nbx", statusPtr(ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
    public static final MethodHandle get_nbx =
            fn("ucp_get_nbx", statusPtr(ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
    public static final MethodHandle worker_fence = fn("ucp_worker_fence", status(ADDRESS));

    // Status text (libucs, reached through libucp's dependencies).
    private static final MethodHandle status_string =
            tiny("ucs_status_string", FunctionDescriptor.of(ADDRESS, JAVA_BYTE));

    /**
     * UCX's own text for a status code.
     *
     * @param status a {@code ucs_status_t}
     * @return the text, for example {@code "Connection reset by remote peer"}
     */
    public static String statusString(int status) {
        try {
            return NativeLinker.cString((MemorySegment) status_string.invokeExact((byte) status));
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }
}
