package org.ucx4j.internal;

import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.MemoryLayout.sequenceLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Every C struct layout the binding reads or writes, declared once.
 *
 * <p>Source: {@code ucp/api/ucp.h} and {@code ucp/api/ucp_def.h} of UCX 1.13 (x86_64 and aarch64 LP64).
 * Later releases only append fields that are guarded by {@code field_mask}, so these layouts hold for
 * newer libraries too. Member names are the C member designators ({@code err_handler.cb} for a member
 * of a nested struct) so that {@code StructLayoutTest} can compile a C probe with {@code offsetof} for
 * every name and compare it with the offsets here. Padding members are unnamed.
 */
public final class Structs {
    private Structs() {}

    /** {@code struct sockaddr_storage}: 128 bytes. */
    public static final long SOCKADDR_STORAGE_SIZE = 128;

    /** {@code ucp_params_t}. */
    public static final StructLayout UCP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_LONG.withName("features"),
            JAVA_LONG.withName("request_size"),
            ADDRESS.withName("request_init"),
            ADDRESS.withName("request_cleanup"),
            JAVA_LONG.withName("tag_sender_mask"),
            JAVA_INT.withName("mt_workers_shared"),
            paddingLayout(4),
            JAVA_LONG.withName("estimated_num_eps"),
            JAVA_LONG.withName("estimated_num_ppn"),
            ADDRESS.withName("name"));

    /** {@code ucp_worker_params_t}; {@code cpu_mask} is {@code ucs_cpu_set_t} (1024 bits). */
    public static final StructLayout UCP_WORKER_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("thread_mode"),
            paddingLayout(4),
            sequenceLayout(16, JAVA_LONG).withName("cpu_mask"),
            JAVA_INT.withName("events"),
            paddingLayout(4),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("event_fd"),
            paddingLayout(4),
            JAVA_LONG.withName("flags"),
            ADDRESS.withName("name"),
            JAVA_LONG.withName("am_alignment"),
            JAVA_LONG.withName("client_id"));

    /** {@code ucp_worker_attr_t}. */
    public static final StructLayout UCP_WORKER_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("thread_mode"),
            JAVA_INT.withName("address_flags"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("address_length"),
            JAVA_LONG.withName("max_am_header"),
            sequenceLayout(32, JAVA_BYTE).withName("name"),
            JAVA_LONG.withName("max_debug_string"));

    /** {@code ucp_context_attr_t}. */
    public static final StructLayout UCP_CONTEXT_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_LONG.withName("request_size"),
            JAVA_INT.withName("thread_mode"),
            paddingLayout(4),
            JAVA_LONG.withName("memory_types"),
            sequenceLayout(32, JAVA_BYTE).withName("name"));

    /** {@code ucp_ep_params_t}; {@code ucs_sock_addr_t} is a pointer and a {@code socklen_t}. */
    public static final StructLayout UCP_EP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_INT.withName("err_mode"),
            paddingLayout(4),
            ADDRESS.withName("err_handler.cb"),
            ADDRESS.withName("err_handler.arg"),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("flags"),
            paddingLayout(4),
            ADDRESS.withName("sockaddr.addr"),
            JAVA_INT.withName("sockaddr.addrlen"),
            paddingLayout(4),
            ADDRESS.withName("conn_request"),
            ADDRESS.withName("name"),
            ADDRESS.withName("local_sockaddr.addr"),
            JAVA_INT.withName("local_sockaddr.addrlen"),
            paddingLayout(4));

    /**
     * {@code ucp_request_attr_t} ({@code ucp_request_query}); {@code status} is a packed enum (one byte),
     * {@code mem_type} a plain one.
     */
    public static final StructLayout UCP_REQUEST_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("debug_string"),
            JAVA_LONG.withName("debug_string_size"),
            JAVA_BYTE.withName("status"),
            paddingLayout(3),
            JAVA_INT.withName("mem_type"));

    /** {@code ucp_listener_params_t}. */
    public static final StructLayout UCP_LISTENER_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("sockaddr.addr"),
            JAVA_INT.withName("sockaddr.addrlen"),
            paddingLayout(4),
            ADDRESS.withName("accept_handler.cb"),
            ADDRESS.withName("accept_handler.arg"),
            ADDRESS.withName("conn_handler.cb"),
            ADDRESS.withName("conn_handler.arg"));

    /** {@code ucp_listener_attr_t}. */
    public static final StructLayout UCP_LISTENER_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            sequenceLayout(SOCKADDR_STORAGE_SIZE, JAVA_BYTE).withName("sockaddr"));

    /** {@code ucp_conn_request_attr_t}. */
    public static final StructLayout UCP_CONN_REQUEST_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            sequenceLayout(SOCKADDR_STORAGE_SIZE, JAVA_BYTE).withName("client_address"),
            JAVA_LONG.withName("client_id"));

    /** {@code ucp_request_param_t}; {@code cb} and {@code recv_info} are unions of pointers. */
    public static final StructLayout UCP_REQUEST_PARAM = MemoryLayout.structLayout(
            JAVA_INT.withName("op_attr_mask"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("request"),
            ADDRESS.withName("cb"),
            JAVA_LONG.withName("datatype"),
            ADDRESS.withName("user_data"),
            ADDRESS.withName("reply_buffer"),
            JAVA_INT.withName("memory_type"),
            paddingLayout(4),
            ADDRESS.withName("recv_info"),
            ADDRESS.withName("memh"));

    /** {@code ucp_tag_recv_info_t}. */
    public static final StructLayout UCP_TAG_RECV_INFO =
            MemoryLayout.structLayout(JAVA_LONG.withName("sender_tag"), JAVA_LONG.withName("length"));

    /** {@code ucp_am_handler_param_t}. */
    public static final StructLayout UCP_AM_HANDLER_PARAM = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("id"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("cb"),
            ADDRESS.withName("arg"));

    /** {@code ucp_am_recv_param_t}. */
    public static final StructLayout UCP_AM_RECV_PARAM =
            MemoryLayout.structLayout(JAVA_LONG.withName("recv_attr"), ADDRESS.withName("reply_ep"));

    // ---------------------------------------------------------------- RMA (memory regions, remote keys)

    /** {@code ucp_mem_map_params_t} (UCX 1.13; 1.14 appends {@code exported_memh_buffer}, guarded by field_mask). */
    public static final StructLayout UCP_MEM_MAP_PARAMS = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("prot"),
            JAVA_INT.withName("memory_type"),
            paddingLayout(4));

    /** {@code ucp_mem_attr_t} (declared in {@code ucp/api/ucp_def.h}). */
    public static final StructLayout UCP_MEM_ATTR = MemoryLayout.structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("mem_type"),
            paddingLayout(4));

    /**
     * The C type name of every layout above, for the layout check.
     *
     * @return C type name to layout, in declaration order
     */
    public static Map<String, StructLayout> all() {
        Map<String, StructLayout> all = new LinkedHashMap<>();
        all.put("ucp_params_t", UCP_PARAMS);
        all.put("ucp_worker_params_t", UCP_WORKER_PARAMS);
        all.put("ucp_worker_attr_t", UCP_WORKER_ATTR);
        all.put("ucp_context_attr_t", UCP_CONTEXT_ATTR);
        all.put("ucp_ep_params_t", UCP_EP_PARAMS);
        all.put("ucp_listener_params_t", UCP_LISTENER_PARAMS);
        all.put("ucp_listener_attr_t", UCP_LISTENER_ATTR);
        all.put("ucp_conn_request_attr_t", UCP_CONN_REQUEST_ATTR);
        all.put("ucp_request_param_t", UCP_REQUEST_PARAM);
        all.put("ucp_tag_recv_info_t", UCP_TAG_RECV_INFO);
        all.put("ucp_am_handler_param_t", UCP_AM_HANDLER_PARAM);
        all.put("ucp_am_recv_param_t", UCP_AM_RECV_PARAM);
        // RMA.
        all.put("ucp_mem_map_params_t", UCP_MEM_MAP_PARAMS);
        all.put("ucp_mem_attr_t", UCP_MEM_ATTR);
        all.put("ucp_request_attr_t", UCP_REQUEST_ATTR);
        return all;
    }

    /**
     * Byte offset of a named member.
     *
     * @param layout one of the layouts above
     * @param member the C member designator
     * @return its offset in bytes
     */
    public static long offset(StructLayout layout, String member) {
        return layout.byteOffset(MemoryLayout.PathElement.groupElement(member));
    }
}
