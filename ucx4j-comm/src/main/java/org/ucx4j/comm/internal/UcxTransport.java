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
 * {@code ucx-worker://<worker address>/<listener>} without any socket: every {@code ucx://} listener
 * publishes its worker's address and its own number (its accept tag) too. Public for {@link java.util.ServiceLoader}; use
 * {@link org.ucx4j.comm.Comms}.
 */
public final class UcxTransport implements org.ucx4j.comm.spi.Transport {
    private static final Logger LOG = LoggerFactory.getLogger(UcxTransport.class);
    static final String WORKER_SCHEME = "ucx-worker";

    /** This instance's UCX contexts and workers (its {@link org.ucx4j.comm.CommContext}'s). */
    private final UcxRuntimes runtimes = new UcxRuntimes();

    /** Creates the transport (ServiceLoader, once per {@link org.ucx4j.comm.CommContext}). */
    public UcxTransport() {}

    /**
     * Ends closed comms' endpoint lingers and closes the unused UCX runtimes now; the others close when
     * their last comm or listener does.
     */
    @Override
    public void close() {
        runtimes.close();
    }

    @Override
    public Set<String> schemes() {
        return Set.of("ucx", "ucxx", WORKER_SCHEME);
    }

    /** An IP-less address: a worker and the accept tag of one of its listeners. */
    record IplessAddress(WorkerAddress worker, long acceptTag) {}

    /** Parses {@code ucx-worker://<base64url worker address>/<listener number>}. */
    static IplessAddress parseIpless(URI uri) {
        String s = uri.getSchemeSpecificPart();
        if (s.startsWith("//")) {
            s = s.substring(2);
        }
        int slash = s.indexOf('/');
        if (slash < 0 || slash == s.length() - 1) {
            throw new IllegalArgumentException("no listener number: expected ucx-worker://<worker address>/<listener>"
                    + " as a ucx:// listener publishes it (CommListener.addresses())");
        }
        String number = s.substring(slash + 1);
        if (number.endsWith("/")) {
            number = number.substring(0, number.length() - 1);
        }
        long n;
        try {
            n = Long.parseLong(number);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("listener number '" + number + "' is not a number");
        }
        if (n < 0 || n > 0xFFFFFFFFL) {
            throw new IllegalArgumentException("listener number " + n + " is out of range 0.." + 0xFFFFFFFFL);
        }
        return new IplessAddress(WorkerAddress.parse(s.substring(0, slash)), UcxRuntime.ACCEPT_TAGS | n);
    }

    /** The address of a worker's listener with the given accept tag, or of a client worker (tag 0: no path). */
    static URI workerUri(WorkerAddress a, long acceptTag) {
        return URI.create(WORKER_SCHEME + "://" + a + (acceptTag == 0 ? "" : "/" + (acceptTag & 0xFFFFFFFFL)));
    }

    // ------------------------------------------------------------------ connect

    @Override
    public CompletableFuture<Comm> connectAsync(URI address, CommOptions options) {
        boolean ipless = WORKER_SCHEME.equalsIgnoreCase(address.getScheme());
        InetSocketAddress target = null;
        IplessAddress workerAddress = null;
        try {
            if (ipless) {
                workerAddress = parseIpless(address);
            } else {
                target = Addresses.socketAddress(address);
            }
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(
                    new IllegalArgumentException("comm address '" + address + "': " + e.getMessage(), e));
        }
        UcxRuntime rt;
        try {
            rt = runtimes.acquire(options.config());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(
                    new CommException("UCX is not usable for " + address + ": " + e.getMessage(), e));
        }
        CompletableFuture<Comm> f = new CompletableFuture<>();
        InetSocketAddress t = target;
        IplessAddress wa = workerAddress;
        Thread.ofVirtual().name("ucx4j-ucx-connect").start(() -> {
            AtomicReference<UcxEndpoint> ep = new AtomicReference<>();
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            try {
                UcxComm c = Watchdog.within(
                        options.connectTimeout(), "connecting to " + address, () -> forceClose(ep.get()), () -> {
                            EndpointErrorHandler onError = (e, err) -> onError(comm, err);
                            long myTag = rt.nextTag();
                            if (t != null) {
                                UcxEndpoint e = rt.worker.await(rt.worker.connectAsync(t, onError));
                                ep.set(e);
                                URI peer = Addresses.uri(address.getScheme().toLowerCase(java.util.Locale.ROOT), t);
                                Handshake.Result r = Handshake.client(
                                        new UcxStreamChannel(e), options, myTag, peer.toString(), null);
                                URI local = parseOr(r.addressSeenByPeer(), peer);
                                return new UcxComm(e, myTag, r.peerTag(), options, local, peer, r.peerIdentity(), rt);
                            }
                            UcxEndpoint e = rt.worker.await(rt.worker.connectAsync(wa.worker(), onError));
                            ep.set(e);
                            UcxTagChannel ch = new UcxTagChannel(e, myTag, wa.acceptTag());
                            URI local = workerUri(rt.worker.address(), 0);
                            Handshake.Result r = Handshake.client(
                                    ch,
                                    options,
                                    myTag,
                                    address.toString(),
                                    rt.worker.address().bytes());
                            return new UcxComm(e, myTag, r.peerTag(), options, local, address, r.peerIdentity(), rt);
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
        if (e instanceof CommException ce
                && ce.getCause() instanceof UcxException ue
                && !(ce instanceof org.ucx4j.comm.CommTimeoutException)) {
            return new CommException("cannot connect to " + address + ": " + ue.getMessage(), ue);
        }
        return e;
    }

    /**
     * The error handler of an accepted endpoint: the peer's hang-up completes {@code peerGone} (a refused
     * handshake waits for it), and a comm made from the endpoint hears of the failure.
     */
    private static EndpointErrorHandler acceptedErrorHandler(
            AtomicReference<UcxComm> comm, CompletableFuture<Void> peerGone) {
        return (e, err) -> {
            peerGone.complete(null);
            onError(comm, err);
        };
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

    /** How long a refusing side keeps its endpoint for the peer to read the VERDICT and hang up. */
    static final java.time.Duration REFUSAL_LINGER = java.time.Duration.ofSeconds(2);

    /**
     * Closes the endpoint of a refused handshake once the peer has hung up (it read the VERDICT), or
     * after {@link #REFUSAL_LINGER}. Closing at once could tear the connection down before the peer
     * posted the receive for the VERDICT's body: UCX fails operations on a reset endpoint, so the peer
     * would see "connection reset" instead of the reason.
     */
    static void closeAfterRefusal(UcxEndpoint ep, CompletableFuture<Void> peerGone) {
        if (ep == null) {
            return;
        }
        CompletableFuture<Void> timer = CommTimers.after(REFUSAL_LINGER, () -> peerGone.complete(null));
        peerGone.whenComplete((v, e) -> {
            timer.cancel(false);
            closeGently(ep);
        });
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
            throw new IllegalArgumentException(
                    "listen on a ucx:// address; its listener publishes a ucx-worker:// one");
        }
        InetSocketAddress bind = Addresses.socketAddress(address);
        UcxRuntime rt = runtimes.acquire(options.config());
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

    /**
     * A UCX listener on the runtime's worker, which also accepts IP-less clients on an accept tag of
     * its own. It holds the runtime until it is closed and its accept receive is gone; each accepted
     * comm holds it too.
     */
    private static final class Listener implements CommListener {
        private final UcxRuntime rt;
        private final String scheme;
        private final CommHandler handler;
        private final CommOptions options;
        private final UcxWorker worker;
        private final UcxListener listener;
        private final long acceptTag;
        private final URI uri;
        private final URI workerUri;
        private final AtomicBoolean closed = new AtomicBoolean();
        private final Arena acceptArena = Arena.ofShared();
        private final MemorySegment acceptBuffer = acceptArena.allocate(HandshakeChannel.MAX_RECORD);
        private final AtomicReference<CompletableFuture<TagInfo>> acceptRecv = new AtomicReference<>();

        Listener(UcxRuntime rt, String scheme, InetSocketAddress bind, CommHandler handler, CommOptions options) {
            this.rt = rt;
            this.acceptTag = rt.nextAcceptTag();
            this.scheme = scheme;
            this.handler = handler;
            this.options = options;
            this.worker = rt.worker;
            try {
                this.listener = worker.listen(bind, this::onRequest);
            } catch (RuntimeException e) {
                acceptArena.close();
                throw e;
            }
            this.uri = Addresses.uri(scheme, listener.address());
            this.workerUri = workerUri(worker.address(), acceptTag);
            postAccept();
        }

        private void onRequest(ConnectionRequest request) {
            if (closed.get()) {
                request.reject();
                return;
            }
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            CompletableFuture<Void> peerGone = new CompletableFuture<>();
            UcxEndpoint ep = request.accept(acceptedErrorHandler(comm, peerGone));
            InetSocketAddress client = request.clientAddress();
            Thread.ofVirtual().name("ucx4j-ucx-accepted").start(() -> {
                long myTag = rt.nextTag();
                URI peer = client != null ? Addresses.uri(scheme, client) : URI.create(scheme + "://unknown:0");
                UcxComm c;
                try {
                    c = Watchdog.within(
                            options.connectTimeout(), "handshake with " + peer, () -> forceClose(ep), () -> {
                                Handshake.Result r = Handshake.listener(
                                        new UcxStreamChannel(ep), options, myTag, peer.toString(), null);
                                return accepted(ep, myTag, r, parseOr(r.addressSeenByPeer(), uri), peer);
                            });
                } catch (RuntimeException e) {
                    LOG.warn("{}: refused a connection from {}: {}", uri, peer, e.getMessage());
                    closeAfterRefusal(ep, peerGone);
                    return;
                }
                comm.set(c);
                Listeners.runHandler(handler, c, uri);
            });
        }

        /** The comm of an accepted connection; it holds the runtime until it is released. */
        private UcxComm accepted(UcxEndpoint ep, long myTag, Handshake.Result r, URI local, URI peer) {
            rt.retain();
            try {
                return new UcxComm(ep, myTag, r.peerTag(), options, local, peer, r.peerIdentity(), rt);
            } catch (RuntimeException e) {
                rt.release();
                throw e;
            }
        }

        /** Waits for the next IP-less client's HELLO on the accept tag. */
        private void postAccept() {
            if (closed.get()) {
                acceptGone();
                return;
            }
            CompletableFuture<TagInfo> f = worker.tagRecvAsync(acceptBuffer, acceptTag, -1L);
            acceptRecv.set(f);
            if (closed.get()) {
                // close() may have looked before the set: cancel ourselves (twice is harmless).
                f.cancel(false);
            }
            f.whenComplete((info, err) -> {
                if (err != null || closed.get()) {
                    if (!closed.get()) {
                        LOG.warn("{}: accept receive failed: {}", uri, err.toString());
                    }
                    acceptGone();
                    return;
                }
                byte[] hello = acceptBuffer.asSlice(0, info.length()).toArray(ValueLayout.JAVA_BYTE);
                postAccept();
                Thread.ofVirtual().name("ucx4j-ucx-worker-accepted").start(() -> acceptIpless(hello));
            });
        }

        /** The accept receive ended for good: free its buffer and let the runtime go. */
        private void acceptGone() {
            synchronized (acceptArena) {
                if (acceptArena.scope().isAlive()) {
                    acceptArena.close();
                    rt.release();
                }
            }
        }

        private void acceptIpless(byte[] hello) {
            AtomicReference<UcxEndpoint> ep = new AtomicReference<>();
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            CompletableFuture<Void> peerGone = new CompletableFuture<>();
            UcxComm c;
            try {
                Handshake.Hello h = Handshake.parseHello(hello);
                if (h.workerAddress() == null) {
                    throw new CommException("an IP-less client sent no worker address");
                }
                WorkerAddress clientAddress = WorkerAddress.of(h.workerAddress());
                URI peer = workerUri(clientAddress, 0);
                long myTag = rt.nextTag();
                c = Watchdog.within(
                        options.connectTimeout(), "handshake with " + peer, () -> forceClose(ep.get()), () -> {
                            UcxEndpoint e = worker.await(
                                    worker.connectAsync(clientAddress, acceptedErrorHandler(comm, peerGone)));
                            ep.set(e);
                            UcxTagChannel ch = new UcxTagChannel(e, myTag, h.tag());
                            Handshake.Result r = Handshake.listener(ch, options, myTag, peer.toString(), hello);
                            return accepted(e, myTag, r, workerUri, peer);
                        });
            } catch (RuntimeException e) {
                LOG.warn("{}: refused an IP-less connection: {}", workerUri, e.getMessage());
                closeAfterRefusal(ep.get(), peerGone);
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
            // Accepted comms stay open and hold the runtime themselves. The accept receive is canceled;
            // its completion frees the buffer and releases the listener's hold on the runtime.
            CompletableFuture<TagInfo> f = acceptRecv.get();
            if (f != null) {
                f.cancel(false);
            }
        }

        @Override
        public String toString() {
            return Listeners.describe(uri, closed.get());
        }
    }
}
