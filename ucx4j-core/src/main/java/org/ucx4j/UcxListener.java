package org.ucx4j;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.internal.NativeCalls;
import org.ucx4j.internal.Sockaddrs;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;

/**
 * Accepts connections on a socket address ({@code ucp_listener_h}). Port 0 picks a free port;
 * {@link #address()} tells which.
 *
 * <p>Ownership: owned by its worker (closed with it) and the caller. Closing stops new connections;
 * endpoints already accepted stay open. Idempotent.
 *
 * <p>Threading: safe from any thread; the {@link ConnectionHandler} runs on the progress thread (in
 * {@link ProgressMode#CALLER} mode, on the thread progressing the worker).
 */
public final class UcxListener implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(UcxListener.class);
    private static final long CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR = 1;

    private final UcxWorker worker;
    private final MemorySegment handle;
    final int id;
    private final InetSocketAddress address;
    private final ConnectionHandler handler;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicLong accepted = new AtomicLong();

    UcxListener(UcxWorker worker, MemorySegment handle, int id, InetSocketAddress address, ConnectionHandler handler) {
        this.worker = worker;
        this.handle = handle;
        this.id = id;
        this.address = address;
        this.handler = handler;
    }

    /**
     * The address the listener is bound to, with the real port when 0 was asked for.
     *
     * @return the bound address (the wildcard address when bound to all interfaces)
     */
    public InetSocketAddress address() {
        return address;
    }

    /**
     * The port the listener is bound to.
     *
     * @return the port
     */
    public int port() {
        return address.getPort();
    }

    /**
     * How many connections this listener accepted.
     *
     * @return the count so far
     */
    public long acceptedCount() {
        return accepted.get();
    }

    /**
     * The worker that owns this listener.
     *
     * @return the worker
     */
    public UcxWorker worker() {
        return worker;
    }

    /** Lock held: a client asked to connect. */
    void onRequest(MemorySegment connRequest) {
        InetSocketAddress client = null;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(Structs.UCP_CONN_REQUEST_ATTR);
            attr.set(JAVA_LONG, 0, CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR);
            int status = NativeCalls.callInt(() -> Ucp.connRequestQuery(connRequest, attr));
            if (status == UcxStatus.OK.code()) {
                client = Sockaddrs.read(attr.asSlice(Structs.offset(Structs.UCP_CONN_REQUEST_ATTR, "client_address")));
            }
        } catch (RuntimeException e) {
            LOG.debug("cannot read the client address of a connection request", e);
        }
        ConnectionRequest request = new ConnectionRequest(this, connRequest, client);
        if (closed.get()) {
            request.reject();
            return;
        }
        try {
            handler.onConnectionRequest(request);
        } catch (Throwable t) {
            LOG.error("connection handler of listener {} failed for {}", address, client, t);
        }
        if (!request.decided()) {
            LOG.debug("connection request from {} left undecided: rejected", client);
            request.reject();
        }
    }

    UcxEndpoint accept(ConnectionRequest request, MemorySegment connRequest, EndpointErrorHandler errorHandler) {
        UcxEndpoint ep = worker.createEndpoint(
                (params, arena) -> {
                    params.set(ADDRESS, Structs.offset(Structs.UCP_EP_PARAMS, "conn_request"), connRequest);
                    return WorkerConnections.EP_PARAM_FIELD_CONN_REQUEST;
                },
                request.clientAddress(),
                errorHandler,
                "ucp_ep_create (accept " + request.clientAddress() + ")");
        accepted.incrementAndGet();
        return ep;
    }

    void reject(MemorySegment connRequest) {
        int status = NativeCalls.callInt(() -> Ucp.listenerReject(handle, connRequest));
        if (status != UcxStatus.OK.code()) {
            LOG.warn("ucp_listener_reject failed with status {}", status);
        }
    }

    /** Stops accepting connections and releases the port. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        worker.closeListener(this);
    }

    /** Lock held. */
    void destroy() {
        closed.set(true);
        NativeCalls.invoke(() -> {
            Ucp.listenerDestroy(handle);
        });
    }

    @Override
    public String toString() {
        return "UcxListener[" + address + (closed.get() ? ", closed" : "") + "]";
    }
}
