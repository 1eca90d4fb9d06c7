package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.IdTable;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Sockaddrs;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.Upcalls;
import org.ucx4j.internal.worker.NativeWorker;
import org.ucx4j.internal.worker.Operation;
import org.ucx4j.internal.worker.OperationKind;
import org.ucx4j.internal.worker.TimerQueue;

/**
 * A worker's endpoints and listeners: creating them ({@code ucp_ep_create} with peer error handling,
 * {@code ucp_listener_create}), the connect handshake (a flush that proves the peer is there, under the
 * connect timeout), the id tables that UCX's endpoint-error and connection-request callbacks are
 * dispatched through, and closing them all when the worker closes.
 *
 * <p>Threading: lock holder only, except the two {@code connect} methods, which submit to the lock.
 */
final class WorkerConnections {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerConnections.class);

    static final long EP_PARAM_FIELD_REMOTE_ADDRESS = 1L;
    static final long EP_PARAM_FIELD_ERR_HANDLING_MODE = 1L << 1;
    static final long EP_PARAM_FIELD_ERR_HANDLER = 1L << 2;
    static final long EP_PARAM_FIELD_SOCK_ADDR = 1L << 4;
    static final long EP_PARAM_FIELD_FLAGS = 1L << 5;
    static final long EP_PARAM_FIELD_CONN_REQUEST = 1L << 6;
    private static final int EP_PARAMS_FLAGS_CLIENT_SERVER = 1;
    private static final int ERR_HANDLING_MODE_NONE = 0;
    private static final int ERR_HANDLING_MODE_PEER = 1;
    private static final long LISTENER_PARAM_FIELD_SOCK_ADDR = 1;
    private static final long LISTENER_PARAM_FIELD_CONN_HANDLER = 1L << 2;
    private static final long LISTENER_ATTR_FIELD_SOCKADDR = 1;

    private final UcxWorker worker;
    private final NativeWorker rt;
    private final WorkerOptions options;
    private final ActiveMessages activeMessages;
    private final IdTable<UcxEndpoint> endpoints = new IdTable<>(8);
    private final IdTable<UcxListener> listeners = new IdTable<>(8);

    WorkerConnections(UcxWorker worker, NativeWorker rt, WorkerOptions options, ActiveMessages activeMessages) {
        this.worker = worker;
        this.rt = rt;
        this.options = options;
        this.activeMessages = activeMessages;
    }

    /** Starts a client-server connection to a listener (lock taken inside). */
    UcxFuture<UcxEndpoint> connect(InetSocketAddress address, EndpointErrorHandler errorHandler) {
        if (address.isUnresolved()) {
            throw new UcxUnreachableException(
                    "connect", UcxStatus.UNREACHABLE.code(), "cannot resolve host '" + address.getHostString() + "'");
        }
        String target = address.getAddress().getHostAddress() + ":" + address.getPort();
        return connect(target, address, errorHandler, (params, arena) -> {
            int len = Sockaddrs.write(address, rt.sockaddr);
            params.set(JAVA_INT, Structs.offset(Structs.UCP_EP_PARAMS, "flags"), EP_PARAMS_FLAGS_CLIENT_SERVER);
            params.set(ADDRESS, Structs.offset(Structs.UCP_EP_PARAMS, "sockaddr.addr"), rt.sockaddr);
            params.set(JAVA_INT, Structs.offset(Structs.UCP_EP_PARAMS, "sockaddr.addrlen"), len);
            return EP_PARAM_FIELD_FLAGS | EP_PARAM_FIELD_SOCK_ADDR;
        });
    }

    /** Starts a connection to another worker by its address (lock taken inside). */
    UcxFuture<UcxEndpoint> connect(WorkerAddress address, EndpointErrorHandler errorHandler) {
        byte[] raw = address.rawBytes();
        return connect("worker address (" + raw.length + " bytes)", null, errorHandler, (params, arena) -> {
            // UCX reads the address only during ucp_ep_create.
            MemorySegment copy = arena.allocate(raw.length);
            MemorySegment.copy(raw, 0, copy, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, raw.length);
            params.set(ADDRESS, Structs.offset(Structs.UCP_EP_PARAMS, "address"), copy);
            return EP_PARAM_FIELD_REMOTE_ADDRESS;
        });
    }

    /**
     * Creates an endpoint and completes the future once it is wired up: a flush on a new endpoint
     * completes only when UCX has finished connecting, which proves the peer is there.
     */
    private UcxFuture<UcxEndpoint> connect(
            String target, InetSocketAddress peer, EndpointErrorHandler errorHandler, EndpointParams fill) {
        UcxFuture<UcxEndpoint> result = new UcxFuture<>();
        UcxEndpoint[] made = new UcxEndpoint[1]; // lock holder only
        boolean[] failing = new boolean[1]; // lock holder only: one failure path per connect
        // Canceling a connect (or its orTimeout) releases the half-made endpoint, like a connect timeout;
        // queued behind the creation task, so the endpoint exists by then unless creation failed.
        result.cancelWith(reason -> rt.engine.later(() -> {
            if (!result.isDone() && !failing[0] && made[0] != null) {
                failing[0] = true;
                failConnect(made[0], result, reason);
            }
        }));
        rt.engine.execute(() -> {
            UcxEndpoint ep;
            try {
                ep = createEndpoint(fill, peer, errorHandler, "ucp_ep_create (connect " + target + ")");
            } catch (Throwable t) {
                result.fail(t);
                return;
            }
            made[0] = ep;
            UcxFuture<Void> flushed = new UcxFuture<>();
            Operation flush = flushed.track(rt, OperationKind.CONNECT, ep.owner(), 0);
            ep.startFlush(flush);
            long timeoutNanos = options.connectTimeout().toNanos();
            TimerQueue.Timer timer = flushed.isDone()
                    ? null
                    : rt.timers.schedule(timeoutNanos, () -> {
                        if (!result.isDone() && !failing[0]) {
                            failing[0] = true;
                            failConnect(
                                    ep,
                                    result,
                                    new UcxTimeoutException(
                                            "connect",
                                            UcxStatus.TIMED_OUT.code(),
                                            "no connection to " + target + " within "
                                                    + options.connectTimeout().toMillis() + " ms"));
                        }
                    });
            flushed.whenComplete((v, e) -> {
                if (timer != null) {
                    timer.cancel();
                }
                if (e == null) {
                    result.succeed(ep);
                } else if (!result.isDone() && !failing[0]) {
                    failing[0] = true;
                    int raw = e instanceof UcxException ue ? ue.rawStatus() : UcxStatus.UNREACHABLE.code();
                    failConnect(
                            ep,
                            result,
                            new UcxUnreachableException(
                                    "connect", raw, "cannot connect to " + target + ": " + e.getMessage()));
                }
            });
        });
        return result;
    }

    /** Releases the half-made endpoint, then fails the connect: a failed connect leaves nothing behind. */
    private static void failConnect(UcxEndpoint ep, UcxFuture<UcxEndpoint> result, UcxException why) {
        UcxFuture<Void> closed = new UcxFuture<>();
        closed.whenComplete((v, e) -> result.fail(why));
        ep.startClose(CloseMode.FORCE, closed);
    }

    /** Creates a listener; lock held. */
    UcxListener createListener(InetSocketAddress bind, ConnectionHandler handler) {
        int slot = listeners.reserve();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sa = arena.allocate(Sockaddrs.MAX_SIZE, 8);
            int len = Sockaddrs.write(bind, sa);
            MemorySegment params = arena.allocate(Structs.UCP_LISTENER_PARAMS);
            params.set(JAVA_LONG, 0, LISTENER_PARAM_FIELD_SOCK_ADDR | LISTENER_PARAM_FIELD_CONN_HANDLER);
            params.set(ADDRESS, Structs.offset(Structs.UCP_LISTENER_PARAMS, "sockaddr.addr"), sa);
            params.set(JAVA_INT, Structs.offset(Structs.UCP_LISTENER_PARAMS, "sockaddr.addrlen"), len);
            params.set(ADDRESS, Structs.offset(Structs.UCP_LISTENER_PARAMS, "conn_handler.cb"), Upcalls.CONN_REQUEST);
            params.set(
                    ADDRESS,
                    Structs.offset(Structs.UCP_LISTENER_PARAMS, "conn_handler.arg"),
                    Upcalls.userData(rt.id, slot));
            MemorySegment out = arena.allocate(ADDRESS);
            int status = NativeCalls.callInt(() -> Ucp.listenerCreate(rt.handle, params, out));
            String where = bind.getAddress().getHostAddress() + ":" + bind.getPort();
            if (status != UcxStatus.OK.code()) {
                String detail = status == UcxStatus.BUSY.code()
                        ? "cannot listen on " + where + ": address already in use"
                        : "cannot listen on " + where;
                throw UcxException.of("ucp_listener_create", status, detail);
            }
            MemorySegment handle = out.get(ADDRESS, 0);
            MemorySegment attr = arena.allocate(Structs.UCP_LISTENER_ATTR);
            attr.set(JAVA_LONG, 0, LISTENER_ATTR_FIELD_SOCKADDR);
            InetSocketAddress bound = bind;
            status = NativeCalls.callInt(() -> Ucp.listenerQuery(handle, attr));
            if (status == UcxStatus.OK.code()) {
                bound = Sockaddrs.read(attr.asSlice(Structs.offset(Structs.UCP_LISTENER_ATTR, "sockaddr")));
            }
            UcxListener listener = new UcxListener(worker, handle, slot, bound, handler);
            listeners.set(slot, listener);
            return listener;
        } catch (RuntimeException e) {
            listeners.unreserve(slot);
            throw e;
        }
    }

    /** Forgets and destroys a listener; lock held. */
    void closeListener(UcxListener listener) {
        listeners.remove(listener.id, listener);
        listener.destroy();
    }

    /** Fills the specific part of {@code ucp_ep_params_t}; returns the field-mask bits it set. */
    @FunctionalInterface
    interface EndpointParams {
        long fill(MemorySegment params, Arena arena);
    }

    /** Lock held: creates an endpoint with peer error handling; {@code fill} sets the specific params. */
    UcxEndpoint createEndpoint(
            EndpointParams fill, InetSocketAddress peer, EndpointErrorHandler errorHandler, String call) {
        int slot = endpoints.reserve();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(Structs.UCP_EP_PARAMS);
            long mask = EP_PARAM_FIELD_ERR_HANDLING_MODE | EP_PARAM_FIELD_ERR_HANDLER | fill.fill(params, arena);
            params.set(JAVA_LONG, 0, mask);
            params.set(
                    JAVA_INT,
                    Structs.offset(Structs.UCP_EP_PARAMS, "err_mode"),
                    options.peerErrorHandling() ? ERR_HANDLING_MODE_PEER : ERR_HANDLING_MODE_NONE);
            params.set(ADDRESS, Structs.offset(Structs.UCP_EP_PARAMS, "err_handler.cb"), Upcalls.EP_ERROR);
            params.set(
                    ADDRESS, Structs.offset(Structs.UCP_EP_PARAMS, "err_handler.arg"), Upcalls.userData(rt.id, slot));
            MemorySegment out = arena.allocate(ADDRESS);
            int status = NativeCalls.callInt(() -> Ucp.epCreate(rt.handle, params, out));
            if (status != UcxStatus.OK.code()) {
                throw UcxException.of(call, status, peer == null ? null : "peer " + peer);
            }
            UcxEndpoint ep = new UcxEndpoint(worker, rt, out.get(ADDRESS, 0), slot, peer, errorHandler);
            endpoints.set(slot, ep);
            activeMessages.endpointOpened(ep);
            return ep;
        } catch (RuntimeException e) {
            endpoints.unreserve(slot);
            throw e;
        }
    }

    /** An endpoint finished closing; lock held. */
    void endpointClosed(UcxEndpoint ep) {
        endpoints.remove(ep.id, ep);
        activeMessages.endpointClosed(ep);
    }

    /** UCX's error callback for an endpoint; lock held. */
    void endpointFailed(int endpointId, int status) {
        UcxEndpoint ep = endpoints.get(endpointId);
        if (ep != null) {
            ep.failed(status);
        }
    }

    /** A connection request reached a listener; lock held. */
    void connectionRequested(int listenerId, MemorySegment connRequest) {
        UcxListener listener = listeners.get(listenerId);
        if (listener == null) {
            LOG.warn("connection request for a closed listener; ignored");
            return;
        }
        listener.onRequest(connRequest);
    }

    /** A snapshot of the open endpoints; lock held. */
    List<UcxEndpoint> endpoints() {
        return endpoints.all();
    }

    /**
     * Destroys every listener and starts the close of every endpoint (the worker is closing); lock held.
     *
     * @param closes receives each endpoint's close future
     * @param mode how: graceful, or by force where receives that UCX could not cancel are left
     */
    void closeAll(List<UcxFuture<Void>> closes, CloseMode mode) {
        for (UcxListener l : listeners.all()) {
            closeListener(l);
        }
        for (UcxEndpoint ep : endpoints.all()) {
            UcxFuture<Void> f = new UcxFuture<>();
            ep.startClose(mode, f);
            closes.add(f);
        }
    }
}
