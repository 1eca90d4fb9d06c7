package org.ucx4j.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * The UCP and UCS functions ucx4j calls, bound once from the loaded library, each behind a typed static
 * method (the handles are static finals, so the JIT treats each as a constant on the hot path).
 *
 * <p>Signatures follow {@code ucp/api/ucp.h} (UCX 1.13). <b>Every function is linked with one shape per
 * arity: all arguments and the result are 64-bit words</b> ({@code long}; {@link NativeLinker#words}), shared
 * with {@link Libc}. Linking a distinct
 * {@link FunctionDescriptor} costs a fresh JVM 5-12 ms of spun classes (its binding code and the
 * method-handle forms around it); UCX's 50 functions had 24 distinct descriptors, 8 shapes remain. On
 * the 64-bit platforms UCX and ucx4j support (x86-64 System V, aarch64 AAPCS64) a pointer, a
 * {@code size_t}, an {@code int} and a one-byte {@code ucs_status_t} all travel in one integer register
 * (or one stack slot from the 7th argument on, x86-64): an argument narrower than 64 bits is passed
 * sign-extended from its Java value, and the callee reads only its own width; a narrower result is the
 * low bits of the returned word, which the typed method narrows ({@code ucs_status_t} is a packed enum,
 * one signed byte: {@code UCS_S_PACKED} in {@code ucs/type/status.h}); a {@code void} function's word is
 * ignored. The methods take {@link MemorySegment}s where the C function takes pointers to structs the
 * caller allocated, and pass their addresses: unlike an {@code ADDRESS} argument, a raw address does not
 * keep the segment's arena alive during the call, so callers pass only memory that no other thread can
 * free meanwhile (their own confined arenas, UCX's handles, the worker's own buffers), as they already
 * did for the data buffers passed as words. Pointer results come back as zero-length segments, as an
 * {@code ADDRESS} result would.
 *
 * <p>Loading this class fails (with the loader's explanation) when UCX is unavailable: callers go through
 * {@link UcxLibrary#require()} first. Only tiny calls that never run callbacks are
 * {@link Linker.Option#critical critical}; {@code ucp_worker_progress} never is, because it calls back
 * into Java.
 *
 * <p>Threading: stateless; each method is as thread-safe as the UCX function it calls.
 */
public final class Ucp {
    private Ucp() {}

    private static final SymbolLookup LIB = UcxLibrary.require().lookup();

    private static MethodHandle fn(String name, int arity) {
        return NativeLinker.downcallWords(LIB, name, arity);
    }

    private static MethodHandle tiny(String name, int arity) {
        return NativeLinker.downcallWords(LIB, name, arity, Linker.Option.critical(false));
    }

    private static long a(MemorySegment s) {
        return s.address();
    }

    private static MemorySegment ptr(long word) {
        return MemorySegment.ofAddress(word);
    }

    // Library, configuration, context.
    private static final MethodHandle CONFIG_READ = fn("ucp_config_read", 3);
    private static final MethodHandle CONFIG_MODIFY = fn("ucp_config_modify", 3);
    private static final MethodHandle CONFIG_RELEASE = fn("ucp_config_release", 1);
    private static final MethodHandle CONFIG_PRINT = fn("ucp_config_print", 4);
    private static final MethodHandle INIT_VERSION = fn("ucp_init_version", 5);
    private static final MethodHandle CLEANUP = fn("ucp_cleanup", 1);
    private static final MethodHandle CONTEXT_PRINT_INFO = fn("ucp_context_print_info", 2);

    // Worker.
    private static final MethodHandle WORKER_CREATE = fn("ucp_worker_create", 3);
    private static final MethodHandle WORKER_DESTROY = fn("ucp_worker_destroy", 1);
    private static final MethodHandle WORKER_QUERY = fn("ucp_worker_query", 2);
    private static final MethodHandle WORKER_RELEASE_ADDRESS = fn("ucp_worker_release_address", 2);
    private static final MethodHandle WORKER_PROGRESS = fn("ucp_worker_progress", 1);
    private static final MethodHandle WORKER_GET_EFD = fn("ucp_worker_get_efd", 2);
    private static final MethodHandle WORKER_ARM = fn("ucp_worker_arm", 1);
    private static final MethodHandle WORKER_SIGNAL = tiny("ucp_worker_signal", 1);
    private static final MethodHandle WORKER_FLUSH_NBX = fn("ucp_worker_flush_nbx", 2);
    private static final MethodHandle WORKER_PRINT_INFO = fn("ucp_worker_print_info", 2);

    // Listener and connection requests.
    private static final MethodHandle LISTENER_CREATE = fn("ucp_listener_create", 3);
    private static final MethodHandle LISTENER_DESTROY = fn("ucp_listener_destroy", 1);
    private static final MethodHandle LISTENER_QUERY = fn("ucp_listener_query", 2);
    private static final MethodHandle LISTENER_REJECT = fn("ucp_listener_reject", 2);
    private static final MethodHandle CONN_REQUEST_QUERY = fn("ucp_conn_request_query", 2);

    // Endpoint.
    private static final MethodHandle EP_PRINT_INFO = fn("ucp_ep_print_info", 2);
    private static final MethodHandle EP_CREATE = fn("ucp_ep_create", 3);
    private static final MethodHandle EP_CLOSE_NBX = fn("ucp_ep_close_nbx", 2);
    private static final MethodHandle EP_FLUSH_NBX = fn("ucp_ep_flush_nbx", 2);

    // Tag and stream messages.
    private static final MethodHandle TAG_SEND_NBX = fn("ucp_tag_send_nbx", 5);
    private static final MethodHandle TAG_RECV_NBX = fn("ucp_tag_recv_nbx", 6);
    private static final MethodHandle TAG_PROBE_NB = fn("ucp_tag_probe_nb", 5);
    private static final MethodHandle TAG_MSG_RECV_NBX = fn("ucp_tag_msg_recv_nbx", 5);
    private static final MethodHandle STREAM_SEND_NBX = fn("ucp_stream_send_nbx", 4);
    private static final MethodHandle STREAM_RECV_NBX = fn("ucp_stream_recv_nbx", 5);

    // Active messages (UCX 1.10+).
    private static final MethodHandle WORKER_SET_AM_RECV_HANDLER = fn("ucp_worker_set_am_recv_handler", 2);
    private static final MethodHandle AM_SEND_NBX = fn("ucp_am_send_nbx", 7);
    private static final MethodHandle AM_RECV_DATA_NBX = fn("ucp_am_recv_data_nbx", 5);
    private static final MethodHandle AM_DATA_RELEASE = fn("ucp_am_data_release", 2);

    // Requests.
    private static final MethodHandle REQUEST_CANCEL = fn("ucp_request_cancel", 2);
    private static final MethodHandle REQUEST_QUERY = fn("ucp_request_query", 2);
    private static final MethodHandle REQUEST_FREE = tiny("ucp_request_free", 1);
    private static final MethodHandle REQUEST_CHECK_STATUS = tiny("ucp_request_check_status", 1);
    private static final MethodHandle TAG_RECV_REQUEST_TEST = tiny("ucp_tag_recv_request_test", 2);

    // RMA: memory regions, remote keys, put/get, fence (all in UCX 1.13; *_nbx since 1.9).
    private static final MethodHandle MEM_MAP = fn("ucp_mem_map", 3);
    private static final MethodHandle MEM_UNMAP = fn("ucp_mem_unmap", 2);
    private static final MethodHandle MEM_QUERY = fn("ucp_mem_query", 2);
    private static final MethodHandle RKEY_PACK = fn("ucp_rkey_pack", 4);
    private static final MethodHandle RKEY_BUFFER_RELEASE = fn("ucp_rkey_buffer_release", 1);
    private static final MethodHandle EP_RKEY_UNPACK = fn("ucp_ep_rkey_unpack", 3);
    private static final MethodHandle RKEY_DESTROY = fn("ucp_rkey_destroy", 1);
    private static final MethodHandle PUT_NBX = fn("ucp_put_nbx", 6);
    private static final MethodHandle GET_NBX = fn("ucp_get_nbx", 6);
    private static final MethodHandle WORKER_FENCE = fn("ucp_worker_fence", 1);

    // Status text (libucs, reached through libucp's dependencies).
    private static final MethodHandle STATUS_STRING = tiny("ucs_status_string", 1);

    /** {@code ucp_config_read(env_prefix, filename, config_p)}: a status. */
    public static byte configRead(MemorySegment envPrefix, MemorySegment filename, MemorySegment configOut)
            throws Throwable {
        return (byte) (long) CONFIG_READ.invokeExact(a(envPrefix), a(filename), a(configOut));
    }

    /** {@code ucp_config_modify(config, name, value)}: a status. */
    public static byte configModify(MemorySegment config, MemorySegment name, MemorySegment value) throws Throwable {
        return (byte) (long) CONFIG_MODIFY.invokeExact(a(config), a(name), a(value));
    }

    /** {@code ucp_config_release(config)}. */
    public static void configRelease(MemorySegment config) throws Throwable {
        long unused = (long) CONFIG_RELEASE.invokeExact(a(config));
    }

    /** {@code ucp_config_print(config, stream, title, print_flags)}. */
    public static void configPrint(MemorySegment config, MemorySegment stream, MemorySegment title, int flags)
            throws Throwable {
        long unused = (long) CONFIG_PRINT.invokeExact(a(config), a(stream), a(title), (long) flags);
    }

    /** {@code ucp_init_version(api_major, api_minor, params, config, context_p)}: a status. */
    public static byte initVersion(int major, int minor, MemorySegment params, MemorySegment config, MemorySegment out)
            throws Throwable {
        return (byte) (long) INIT_VERSION.invokeExact((long) major, (long) minor, a(params), a(config), a(out));
    }

    /** {@code ucp_cleanup(context)}. */
    public static void cleanup(MemorySegment context) throws Throwable {
        long unused = (long) CLEANUP.invokeExact(a(context));
    }

    /** {@code ucp_context_print_info(context, stream)}. */
    public static void contextPrintInfo(MemorySegment context, MemorySegment stream) throws Throwable {
        long unused = (long) CONTEXT_PRINT_INFO.invokeExact(a(context), a(stream));
    }

    /** {@code ucp_worker_create(context, params, worker_p)}: a status. */
    public static byte workerCreate(MemorySegment context, MemorySegment params, MemorySegment out) throws Throwable {
        return (byte) (long) WORKER_CREATE.invokeExact(a(context), a(params), a(out));
    }

    /** {@code ucp_worker_destroy(worker)}. */
    public static void workerDestroy(MemorySegment worker) throws Throwable {
        long unused = (long) WORKER_DESTROY.invokeExact(a(worker));
    }

    /** {@code ucp_worker_query(worker, attr)}: a status. */
    public static byte workerQuery(MemorySegment worker, MemorySegment attr) throws Throwable {
        return (byte) (long) WORKER_QUERY.invokeExact(a(worker), a(attr));
    }

    /** {@code ucp_worker_release_address(worker, address)}. */
    public static void workerReleaseAddress(MemorySegment worker, MemorySegment address) throws Throwable {
        long unused = (long) WORKER_RELEASE_ADDRESS.invokeExact(a(worker), a(address));
    }

    /** {@code ucp_worker_progress(worker)}: how many events it processed (an unsigned int). */
    public static int workerProgress(MemorySegment worker) throws Throwable {
        return (int) (long) WORKER_PROGRESS.invokeExact(a(worker));
    }

    /** {@code ucp_worker_get_efd(worker, fd)}: a status. */
    public static byte workerGetEfd(MemorySegment worker, MemorySegment fdOut) throws Throwable {
        return (byte) (long) WORKER_GET_EFD.invokeExact(a(worker), a(fdOut));
    }

    /** {@code ucp_worker_arm(worker)}: a status. */
    public static byte workerArm(MemorySegment worker) throws Throwable {
        return (byte) (long) WORKER_ARM.invokeExact(a(worker));
    }

    /** {@code ucp_worker_signal(worker)}: a status; critical (no callbacks). */
    public static byte workerSignal(MemorySegment worker) throws Throwable {
        return (byte) (long) WORKER_SIGNAL.invokeExact(a(worker));
    }

    /** {@code ucp_worker_flush_nbx(worker, param)}: NULL, a status or a request, as the word it is. */
    public static long workerFlushNbx(MemorySegment worker, MemorySegment param) throws Throwable {
        return (long) WORKER_FLUSH_NBX.invokeExact(a(worker), a(param));
    }

    /** {@code ucp_worker_print_info(worker, stream)}. */
    public static void workerPrintInfo(MemorySegment worker, MemorySegment stream) throws Throwable {
        long unused = (long) WORKER_PRINT_INFO.invokeExact(a(worker), a(stream));
    }

    /** {@code ucp_listener_create(worker, params, listener_p)}: a status. */
    public static byte listenerCreate(MemorySegment worker, MemorySegment params, MemorySegment out) throws Throwable {
        return (byte) (long) LISTENER_CREATE.invokeExact(a(worker), a(params), a(out));
    }

    /** {@code ucp_listener_destroy(listener)}. */
    public static void listenerDestroy(MemorySegment listener) throws Throwable {
        long unused = (long) LISTENER_DESTROY.invokeExact(a(listener));
    }

    /** {@code ucp_listener_query(listener, attr)}: a status. */
    public static byte listenerQuery(MemorySegment listener, MemorySegment attr) throws Throwable {
        return (byte) (long) LISTENER_QUERY.invokeExact(a(listener), a(attr));
    }

    /** {@code ucp_listener_reject(listener, conn_request)}: a status. */
    public static byte listenerReject(MemorySegment listener, MemorySegment connRequest) throws Throwable {
        return (byte) (long) LISTENER_REJECT.invokeExact(a(listener), a(connRequest));
    }

    /** {@code ucp_conn_request_query(conn_request, attr)}: a status. */
    public static byte connRequestQuery(MemorySegment connRequest, MemorySegment attr) throws Throwable {
        return (byte) (long) CONN_REQUEST_QUERY.invokeExact(a(connRequest), a(attr));
    }

    /** {@code ucp_ep_print_info(ep, stream)}. */
    public static void epPrintInfo(MemorySegment ep, MemorySegment stream) throws Throwable {
        long unused = (long) EP_PRINT_INFO.invokeExact(a(ep), a(stream));
    }

    /** {@code ucp_ep_create(worker, params, ep_p)}: a status. */
    public static byte epCreate(MemorySegment worker, MemorySegment params, MemorySegment out) throws Throwable {
        return (byte) (long) EP_CREATE.invokeExact(a(worker), a(params), a(out));
    }

    /** {@code ucp_ep_close_nbx(ep, param)}: NULL, a status or a request. */
    public static MemorySegment epCloseNbx(MemorySegment ep, MemorySegment param) throws Throwable {
        return ptr((long) EP_CLOSE_NBX.invokeExact(a(ep), a(param)));
    }

    /** {@code ucp_ep_flush_nbx(ep, param)}: NULL, a status or a request. */
    public static MemorySegment epFlushNbx(MemorySegment ep, MemorySegment param) throws Throwable {
        return ptr((long) EP_FLUSH_NBX.invokeExact(a(ep), a(param)));
    }

    /** {@code ucp_tag_send_nbx(ep, buffer, count, tag, param)}: NULL, a status or a request, as a word. */
    public static long tagSendNbx(MemorySegment ep, long buffer, long count, long tag, MemorySegment param)
            throws Throwable {
        return (long) TAG_SEND_NBX.invokeExact(a(ep), buffer, count, tag, a(param));
    }

    /** {@code ucp_tag_recv_nbx(worker, buffer, count, tag, tag_mask, param)}: as {@link #tagSendNbx}. */
    public static long tagRecvNbx(
            MemorySegment worker, long buffer, long count, long tag, long mask, MemorySegment param) throws Throwable {
        return (long) TAG_RECV_NBX.invokeExact(a(worker), buffer, count, tag, mask, a(param));
    }

    /** {@code ucp_tag_probe_nb(worker, tag, tag_mask, remove, info)}: a message handle or NULL. */
    public static MemorySegment tagProbeNb(MemorySegment worker, long tag, long mask, int remove, MemorySegment info)
            throws Throwable {
        return ptr((long) TAG_PROBE_NB.invokeExact(a(worker), tag, mask, (long) remove, a(info)));
    }

    /** {@code ucp_tag_msg_recv_nbx(worker, buffer, count, message, param)} (UCX 1.9+): NULL, a status or a request. */
    public static MemorySegment tagMsgRecvNbx(
            MemorySegment worker, MemorySegment buffer, long count, MemorySegment message, MemorySegment param)
            throws Throwable {
        return ptr((long) TAG_MSG_RECV_NBX.invokeExact(a(worker), a(buffer), count, a(message), a(param)));
    }

    /** {@code ucp_stream_send_nbx(ep, buffer, count, param)}: as {@link #tagSendNbx}. */
    public static long streamSendNbx(MemorySegment ep, long buffer, long count, MemorySegment param) throws Throwable {
        return (long) STREAM_SEND_NBX.invokeExact(a(ep), buffer, count, a(param));
    }

    /** {@code ucp_stream_recv_nbx(ep, buffer, count, length, param)}: as {@link #tagSendNbx}. */
    public static long streamRecvNbx(
            MemorySegment ep, long buffer, long count, MemorySegment lengthOut, MemorySegment param) throws Throwable {
        return (long) STREAM_RECV_NBX.invokeExact(a(ep), buffer, count, a(lengthOut), a(param));
    }

    /** {@code ucp_worker_set_am_recv_handler(worker, param)}: a status. */
    public static byte workerSetAmRecvHandler(MemorySegment worker, MemorySegment param) throws Throwable {
        return (byte) (long) WORKER_SET_AM_RECV_HANDLER.invokeExact(a(worker), a(param));
    }

    /** {@code ucp_am_send_nbx(ep, id, header, header_length, buffer, count, param)}: as {@link #tagSendNbx}. */
    public static long amSendNbx(
            MemorySegment ep,
            int id,
            MemorySegment header,
            long headerLength,
            MemorySegment buffer,
            long count,
            MemorySegment param)
            throws Throwable {
        return (long) AM_SEND_NBX.invokeExact(a(ep), (long) id, a(header), headerLength, a(buffer), count, a(param));
    }

    /** {@code ucp_am_recv_data_nbx(worker, data_desc, buffer, count, param)}: NULL, a status or a request. */
    public static MemorySegment amRecvDataNbx(
            MemorySegment worker, MemorySegment desc, MemorySegment buffer, long count, MemorySegment param)
            throws Throwable {
        return ptr((long) AM_RECV_DATA_NBX.invokeExact(a(worker), a(desc), a(buffer), count, a(param)));
    }

    /** {@code ucp_am_data_release(worker, data)}. */
    public static void amDataRelease(MemorySegment worker, MemorySegment data) throws Throwable {
        long unused = (long) AM_DATA_RELEASE.invokeExact(a(worker), a(data));
    }

    /** {@code ucp_request_cancel(worker, request)}; ucx4j keeps requests as numbers. */
    public static void requestCancel(MemorySegment worker, long request) throws Throwable {
        long unused = (long) REQUEST_CANCEL.invokeExact(a(worker), request);
    }

    /** {@code ucp_request_query(request, attr)}: a status; asked once per large receive UCX did not finish at once. */
    public static byte requestQuery(long request, MemorySegment attr) throws Throwable {
        return (byte) (long) REQUEST_QUERY.invokeExact(request, a(attr));
    }

    /** {@code ucp_request_free(request)}; critical (no callbacks). */
    public static void requestFree(long request) throws Throwable {
        long unused = (long) REQUEST_FREE.invokeExact(request);
    }

    /**
     * {@code ucp_request_check_status(request)}: {@code UCS_INPROGRESS} while a request without a callback
     * runs, then its completion status; critical (no callbacks).
     */
    public static byte requestCheckStatus(long request) throws Throwable {
        return (byte) (long) REQUEST_CHECK_STATUS.invokeExact(request);
    }

    /**
     * {@code ucp_tag_recv_request_test(request, info)}: as {@link #requestCheckStatus} for a tag receive,
     * and fills {@code info} (the sender's tag and the length) once it is done; critical (no callbacks).
     */
    public static byte tagRecvRequestTest(long request, MemorySegment info) throws Throwable {
        return (byte) (long) TAG_RECV_REQUEST_TEST.invokeExact(request, a(info));
    }

    /** {@code ucp_mem_map(context, params, memh_p)}: a status. */
    public static byte memMap(MemorySegment context, MemorySegment params, MemorySegment out) throws Throwable {
        return (byte) (long) MEM_MAP.invokeExact(a(context), a(params), a(out));
    }

    /** {@code ucp_mem_unmap(context, memh)}: a status. */
    public static byte memUnmap(MemorySegment context, MemorySegment memh) throws Throwable {
        return (byte) (long) MEM_UNMAP.invokeExact(a(context), a(memh));
    }

    /** {@code ucp_mem_query(memh, attr)}: a status. */
    public static byte memQuery(MemorySegment memh, MemorySegment attr) throws Throwable {
        return (byte) (long) MEM_QUERY.invokeExact(a(memh), a(attr));
    }

    /** {@code ucp_rkey_pack(context, memh, rkey_buffer_p, size_p)}: a status. */
    public static byte rkeyPack(
            MemorySegment context, MemorySegment memh, MemorySegment bufferOut, MemorySegment sizeOut)
            throws Throwable {
        return (byte) (long) RKEY_PACK.invokeExact(a(context), a(memh), a(bufferOut), a(sizeOut));
    }

    /** {@code ucp_rkey_buffer_release(rkey_buffer)}. */
    public static void rkeyBufferRelease(MemorySegment buffer) throws Throwable {
        long unused = (long) RKEY_BUFFER_RELEASE.invokeExact(a(buffer));
    }

    /** {@code ucp_ep_rkey_unpack(ep, rkey_buffer, rkey_p)}: a status. */
    public static byte epRkeyUnpack(MemorySegment ep, MemorySegment buffer, MemorySegment out) throws Throwable {
        return (byte) (long) EP_RKEY_UNPACK.invokeExact(a(ep), a(buffer), a(out));
    }

    /** {@code ucp_rkey_destroy(rkey)}. */
    public static void rkeyDestroy(MemorySegment rkey) throws Throwable {
        long unused = (long) RKEY_DESTROY.invokeExact(a(rkey));
    }

    /** {@code ucp_put_nbx(ep, buffer, count, remote_addr, rkey, param)}: NULL, a status or a request. */
    public static MemorySegment putNbx(
            MemorySegment ep, MemorySegment buffer, long count, long remote, MemorySegment rkey, MemorySegment param)
            throws Throwable {
        return ptr((long) PUT_NBX.invokeExact(a(ep), a(buffer), count, remote, a(rkey), a(param)));
    }

    /** {@code ucp_get_nbx(ep, buffer, count, remote_addr, rkey, param)}: NULL, a status or a request. */
    public static MemorySegment getNbx(
            MemorySegment ep, MemorySegment buffer, long count, long remote, MemorySegment rkey, MemorySegment param)
            throws Throwable {
        return ptr((long) GET_NBX.invokeExact(a(ep), a(buffer), count, remote, a(rkey), a(param)));
    }

    /** {@code ucp_worker_fence(worker)}: a status. */
    public static byte workerFence(MemorySegment worker) throws Throwable {
        return (byte) (long) WORKER_FENCE.invokeExact(a(worker));
    }

    /**
     * UCX's own text for a status code.
     *
     * @param status a {@code ucs_status_t}
     * @return the text, for example {@code "Connection reset by remote peer"}
     */
    public static String statusString(int status) {
        try {
            return NativeLinker.cString(ptr((long) STATUS_STRING.invokeExact((long) (byte) status)));
        } catch (Throwable t) {
            throw NativeCalls.unchecked(t);
        }
    }
}
