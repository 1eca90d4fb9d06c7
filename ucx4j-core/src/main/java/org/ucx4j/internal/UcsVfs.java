package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The endpoints UCX holds for a worker, read from UCS's in-process virtual file system
 * ({@code ucs_vfs_path_list_dir}, {@code ucs/vfs/base/vfs_obj.h}): UCP lists each worker under
 * {@code ucp/context/<context>/worker/<worker>} and each of its endpoints under {@code .../ep/<endpoint>}
 * ({@code ucp_worker_create_vfs}, {@code ucp_ep_vfs_init}), the ones UCX made by itself for peers that
 * connected to the worker's address included, which no UCP call enumerates.
 *
 * <p>Only what UCX 1.13 does is relied upon: a worker created without a name is named {@code "%p"} of its
 * handle ({@code ucp_worker.c}), and an endpoint's directory is {@code "%p"} of its handle on builds
 * without debug data ({@code ucp_ep_vfs.c}; with debug data it is the endpoint's name, which this class
 * does not resolve). Anything else answers "cannot tell".
 *
 * <p>Threading: any thread; a listing runs the callback synchronously on the calling thread. The caller
 * holds the worker (UCX takes the worker's async lock to refresh the listing).
 */
public final class UcsVfs {
    private UcsVfs() {}

    private static final ThreadLocal<List<String>> LISTING = new ThreadLocal<>();

    /** {@code ucs_vfs_path_list_dir(path, cb, arg)}; absent before UCX 1.11. */
    private static final class Holder {
        static final Optional<MethodHandle> LIST_DIR = UcxLibrary.require()
                .lookup()
                .find("ucs_vfs_path_list_dir")
                .map(s -> NativeLinker.downcallWords(UcxLibrary.require().lookup(), "ucs_vfs_path_list_dir", 3));
        static final MemorySegment CALLBACK = NativeLinker.upcall(
                UcsVfs.class,
                "listed",
                MethodType.methodType(void.class, long.class, long.class),
                FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_LONG));
    }

    /** The {@code ucs_vfs_list_dir_cb_t}: one entry's name. Called by UCX only. */
    public static void listed(long name, long arg) {
        List<String> out = LISTING.get();
        if (out != null && name != 0) {
            out.add(NativeLinker.view(MemorySegment.ofAddress(name), Long.MAX_VALUE)
                    .getString(0));
        }
    }

    /** The names in a VFS directory, or empty when it does not exist (or the listing is unavailable). */
    static Optional<List<String>> list(String path) {
        if (Holder.LIST_DIR.isEmpty()) {
            return Optional.empty();
        }
        List<String> out = new ArrayList<>();
        List<String> previous = LISTING.get();
        LISTING.set(out);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocateFrom(path);
            long status = (long) Holder.LIST_DIR.get().invokeExact(p.address(), Holder.CALLBACK.address(), 0L);
            return (byte) status == 0 ? Optional.of(out) : Optional.empty();
        } catch (Throwable t) {
            return Optional.empty();
        } finally {
            LISTING.set(previous);
        }
    }

    /**
     * The handles of the endpoints UCX holds for {@code worker} (one created without a name), or empty
     * when that cannot be told: no VFS in this UCX, the worker not listed (UCX could not add its
     * context's directory, e.g. another live context has the same name), or an endpoint listed by name.
     */
    public static Optional<List<Long>> endpointsOf(MemorySegment worker) {
        String workerName = "0x" + Long.toHexString(worker.address());
        Optional<List<String>> contexts = list("/ucp/context");
        if (contexts.isEmpty()) {
            return Optional.empty();
        }
        for (String context : contexts.get()) {
            String workerDir = "/ucp/context/" + context + "/worker/" + workerName;
            if (list(workerDir).isEmpty()) {
                continue;
            }
            Optional<List<String>> eps = list(workerDir + "/ep");
            if (eps.isEmpty()) {
                return Optional.of(List.of()); // no endpoint was ever listed under the worker
            }
            List<Long> handles = new ArrayList<>();
            for (String ep : eps.get()) {
                if (!ep.startsWith("0x")) {
                    return Optional.empty();
                }
                try {
                    handles.add(Long.parseUnsignedLong(ep.substring(2), 16));
                } catch (NumberFormatException e) {
                    return Optional.empty();
                }
            }
            return Optional.of(handles);
        }
        return Optional.empty();
    }
}
