package org.ucx4j.comm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.CloseMode;
import org.ucx4j.ConnectionRequest;
import org.ucx4j.EndpointErrorHandler;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxException;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerAddress;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommHandler;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;

/**
 * {@code ucx://host:port} (alias {@code ucxx://}) over UCX's socket-address connection set-up, and
 * {@code ucx-worker://<worker address>} without any socket: a {@code ucx://} listener has a worker of
 * its own and publishes that worker's address too. Public for {@link java.util.ServiceLoader}; use
 * {@link org.ucx4j.comm.Comms}.
 */
public final class UcxTransport implements org.ucx4j.comm.spi.Transport {
    private static final Logger LOG = LoggerFactory.getLogger(UcxTransport.class);
    static final String WORKER_SCHEME = "ucx-worker";

    /** Creates the transport (ServiceLoader). */
    public UcxTransport() {}

    @Override
    public Set<String> schemes() {
        return Set.of("ucx", "ucxx", WORKER_SCHEME);
    }

    private static String workerAddressText(URI uri) {
        String s = uri.getSchemeSpecificPart();
        if (s.startsWith("//")) {
            s = s.substring(2);
        }
        if (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    static URI workerUri(WorkerAddress a) {
        return URI.create(WORKER_SCHEME + "://" + a);
    }

    // ------------------------------------------------------------------ connect

    @Override
    public CompletableFuture<Comm> connectAsync(URI address, CommOptions options) {
        boolean ipless = WORKER_SCHEME.equalsIgnoreCase(address.getScheme());
        InetSocketAddress target = null;
        WorkerAddress workerAddress = null;
        try {
            if (ipless) {
                workerAddress = WorkerAddress.parse(workerAddressText(address));
            } else {
                target = Addresses.socketAddress(address);
            }
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("comm address '" + address + "': "
                    + e.getMessage(), e));
        }
        UcxRuntime rt;
        try {
            rt = UcxRuntime.acquire(options.config());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(new CommException("UCX is not usable for " + address + ": "
                    + e.getMessage(), e));
        }
        CompletableFuture<Comm> f = new CompletableFuture<>();
        InetSocketAddress t = target;
        WorkerAddress wa = workerAddress;
        Thread.ofVirtual().name("ucx4j-ucx-connect").start(() -> {
            AtomicReference<UcxEndpoint> ep = new AtomicReference<>();
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            try {
                UcxComm c = Watchdog.within(options.connectTimeout(), "connecting to " + address,
                        () -> forceClose(ep.get()), () -> {
                            EndpointErrorHandler onError = (e, err) -> onError(comm, err);
                            long myTag = UcxRuntime.nextTag();
                            if (t != null) {
                                UcxEndpoint e = rt.clientWorker.await(rt.clientWorker.connectAsync(t, onError));
                                ep.set(e);
                                URI peer = Addresses.uri(address.getScheme().toLowerCase(java.util.Locale.ROOT), t);
                                Handshake.Result r = Handshake.client(new UcxStreamChannel(e), options, myTag,
                                        peer.toString(), null);
                                URI local = parseOr(r.addressSeenByPeer(), peer);
                                return new UcxComm(e, myTag, r.peerTag(), options, local, peer, r.peerIdentity(), rt::release);
                            }
                            UcxEndpoint e = rt.clientWorker.await(rt.clientWorker.connectAsync(wa, onError));
                            ep.set(e);
                            UcxTagChannel ch = new UcxTagChannel(e, myTag, UcxRuntime.ACCEPT_TAG);
                            URI local = workerUri(rt.clientWorker.address());
                            Handshake.Result r = Handshake.client(ch, options, myTag, address.toString(),
                                    rt.clientWorker.address().bytes());
                            return new UcxComm(e, myTag, r.peerTag(), options, local, address, r.peerIdentity(), rt::release);
                        });
                comm.set(c);
                if (!f.complete(c)) {
                    c.abort();
                }
            } catch (Throwable e) {
                forceClose(ep.get());
                rt.release();
                f.completeExceptionally(mapConnectError(e, address));
            }
        });
        return f;
    }

    private static Throwable mapConnectError(Throwable e, URI address) {
        if (e instanceof CommException ce && ce.getCause() instanceof UcxException ue && !(ce instanceof org.ucx4j.comm.CommTimeoutException)) {
            return new CommException("cannot connect to " + address + ": " + ue.getMessage(), ue);
        }
        return e;
    }

    private static void onError(AtomicReference<UcxComm> comm, UcxException err) {
        UcxComm c = comm.get();
        if (c != null) {
            c.onEndpointError(err);
        }
    }

    private static URI parseOr(String s, URI fallback) {
        try {
            return s == null || s.isEmpty() ? fallback : URI.create(s);
        } catch (IllegalArgumentException e) {
            return fallback;
        }
    }

    static void closeGently(UcxEndpoint ep) {
        try {
            ep.closeAsync(CloseMode.FLUSH);
        } catch (RuntimeException ignored) {
            // already closed or failed
        }
    }

    static void forceClose(UcxEndpoint ep) {
        if (ep != null) {
            try {
                ep.closeAsync(CloseMode.FORCE);
            } catch (RuntimeException ignored) {
                // already closed or failed
            }
        }
    }

    // ------------------------------------------------------------------ listen

    @Override
    public CommListener listen(URI address, CommHandler handler, CommOptions options) {
        if (WORKER_SCHEME.equalsIgnoreCase(address.getScheme())) {
            throw new IllegalArgumentException("listen on a ucx:// address; its listener publishes a ucx-worker:// one");
        }
        InetSocketAddress bind = Addresses.socketAddress(address);
        UcxRuntime rt = UcxRuntime.acquire(options.config());
        try {
            return new Listener(rt, address.getScheme().toLowerCase(java.util.Locale.ROOT), bind, handler, options);
        } catch (RuntimeException e) {
            rt.release();
            if (e instanceof UcxException ue) {
                throw new CommException("cannot listen on " + address + ": " + ue.getMessage(), ue);
            }
            throw e;
        }
    }

    /** A UCX listener with a worker of its own, which also accepts IP-less clients on its accept tag. */
    private static final class Listener implements CommListener {
        private final UcxRuntime rt;
        private final String scheme;
        private final CommHandler handler;
        private final CommOptions options;
        private final UcxWorker worker;
        private final UcxListener listener;
        private final URI uri;
        private final URI workerUri;
        private final AtomicBoolean closed = new AtomicBoolean();
        private final java.util.concurrent.atomic.AtomicInteger refs = new java.util.concurrent.atomic.AtomicInteger(1);
        private final Arena acceptArena = Arena.ofShared();
        private final MemorySegment acceptBuffer = acceptArena.allocate(HandshakeChannel.MAX_RECORD);

        Listener(UcxRuntime rt, String scheme, InetSocketAddress bind, CommHandler handler, CommOptions options) {
            this.rt = rt;
            this.scheme = scheme;
            this.handler = handler;
            this.options = options;
            this.worker = rt.context.newWorker(UcxRuntime.workerOptions(rt.config, "ucx4j-comm-listener"));
            try {
                this.listener = worker.listen(bind, this::onRequest);
            } catch (RuntimeException e) {
                worker.close();
                throw e;
            }
            this.uri = Addresses.uri(scheme, listener.address());
            this.workerUri = workerUri(worker.address());
            postAccept();
        }

        private void onRequest(ConnectionRequest request) {
            if (closed.get()) {
                request.reject();
                return;
            }
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            UcxEndpoint ep = request.accept((e, err) -> onError(comm, err));
            InetSocketAddress client = request.clientAddress();
            Thread.ofVirtual().name("ucx4j-ucx-accepted").start(() -> {
                long myTag = UcxRuntime.nextTag();
                URI peer = client != null ? Addresses.uri(scheme, client) : URI.create(scheme + "://unknown:0");
                UcxComm c;
                try {
                    c = Watchdog.within(options.connectTimeout(), "handshake with " + peer, () -> forceClose(ep), () -> {
                        Handshake.Result r = Handshake.listener(new UcxStreamChannel(ep), options, myTag, peer.toString(), null);
                        refs.incrementAndGet();
                        return new UcxComm(ep, myTag, r.peerTag(), options, parseOr(r.addressSeenByPeer(), uri), peer,
                                r.peerIdentity(), this::unref);
                    });
                } catch (RuntimeException e) {
                    LOG.warn("{}: refused a connection from {}: {}", uri, peer, e.getMessage());
                    // Flush, so that the refusal (VERDICT) reaches the client before the disconnect.
                    closeGently(ep);
                    return;
                }
                comm.set(c);
                Listeners.runHandler(handler, c, uri);
            });
        }

        /** Waits for the next IP-less client's HELLO on the accept tag. */
        private void postAccept() {
            if (closed.get()) {
                return;
            }
            worker.tagRecvAsync(acceptBuffer, UcxRuntime.ACCEPT_TAG, -1L).whenComplete((info, err) -> {
                if (err != null || closed.get()) {
                    if (!closed.get()) {
                        LOG.warn("{}: accept receive failed: {}", uri, err.toString());
                    }
                    return;
                }
                byte[] hello = acceptBuffer.asSlice(0, info.length()).toArray(ValueLayout.JAVA_BYTE);
                postAccept();
                Thread.ofVirtual().name("ucx4j-ucx-worker-accepted").start(() -> acceptIpless(hello));
            });
        }

        private void acceptIpless(byte[] hello) {
            AtomicReference<UcxEndpoint> ep = new AtomicReference<>();
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            UcxComm c;
            try {
                Handshake.Hello h = Handshake.parseHello(hello);
                if (h.workerAddress() == null) {
                    throw new CommException("an IP-less client sent no worker address");
                }
                WorkerAddress clientAddress = WorkerAddress.of(h.workerAddress());
                URI peer = workerUri(clientAddress);
                long myTag = UcxRuntime.nextTag();
                c = Watchdog.within(options.connectTimeout(), "handshake with " + peer, () -> forceClose(ep.get()), () -> {
                    UcxEndpoint e = worker.await(worker.connectAsync(clientAddress, (x, err) -> onError(comm, err)));
                    ep.set(e);
                    UcxTagChannel ch = new UcxTagChannel(e, myTag, h.tag());
                    Handshake.Result r = Handshake.listener(ch, options, myTag, peer.toString(), hello);
                    refs.incrementAndGet();
                    return new UcxComm(e, myTag, r.peerTag(), options, workerUri, peer, r.peerIdentity(), this::unref);
                });
            } catch (RuntimeException e) {
                LOG.warn("{}: refused an IP-less connection: {}", workerUri, e.getMessage());
                forceClose(ep.get());
                return;
            }
            comm.set(c);
            Listeners.runHandler(handler, c, workerUri);
        }

        @Override
        public URI address() {
            return uri;
        }

        @Override
        public List<URI> addresses() {
            return List.of(uri, workerUri);
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            try {
                listener.close();
            } catch (RuntimeException e) {
                LOG.debug("closing {}", uri, e);
            }
            // The listener's worker carries its accepted comms: it closes when the last of them is gone.
            unref();
        }

        /** The listener itself and each accepted comm hold a reference; the last one closes the worker. */
        private void unref() {
            if (refs.decrementAndGet() != 0) {
                return;
            }
            try {
                worker.close();
            } catch (RuntimeException e) {
                LOG.warn("closing the worker of {} failed", uri, e);
            }
            acceptArena.close();
            rt.release();
        }

        @Override
        public String toString() {
            return "CommListener[" + uri + (closed.get() ? ", closed" : "") + "]";
        }
    }
}
