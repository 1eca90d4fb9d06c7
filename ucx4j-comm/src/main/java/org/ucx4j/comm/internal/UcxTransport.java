package org.ucx4j.comm.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.CloseMode;
import org.ucx4j.EndpointErrorHandler;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxException;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerAddress;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommHandler;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;

/**
 * {@code ucx://host:port} (alias {@code ucxx://}): the handshake on a plain TCP socket, then UCX
 * endpoints made from the worker addresses the authenticated sides give each other; and
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
            AtomicReference<SocketChannel> socket = new AtomicReference<>();
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            // Set once a comm exists: it holds (or has let go of) rt and myTag from then on, also when the
            // Watchdog's deadline wins and closes it.
            AtomicBoolean handedOver = new AtomicBoolean();
            long myTag = rt.nextTag();
            try {
                UcxComm c = Watchdog.within(
                        options.connectTimeout(),
                        "connecting to " + address,
                        () -> {
                            TcpTransport.closeQuietly(socket.get());
                            forceClose(ep.get());
                        },
                        () -> {
                            EndpointErrorHandler onError = (e, err) -> onError(comm, err);
                            return t != null
                                    ? connectThroughSocket(
                                            rt, address, t, options, myTag, onError, socket, ep, handedOver)
                                    : connectIpless(rt, address, wa, options, myTag, onError, ep, handedOver);
                        });
                comm.set(c);
                if (!f.complete(c)) {
                    c.abort();
                }
            } catch (Throwable e) {
                forceClose(ep.get());
                TcpTransport.closeQuietly(socket.get());
                if (!handedOver.get()) {
                    rt.releaseTag(myTag);
                    rt.release();
                }
                f.completeExceptionally(mapConnectError(e, address));
            }
        });
        return f;
    }

    /**
     * {@code ucx://}: the handshake on a plain TCP socket; once both sides proved the secret, each
     * gives the other its comm's tag and its worker address, and the UCX endpoint is made from the
     * listener's worker address. The socket stays open as long as the comm's endpoint (see
     * {@link UcxComm}: its end is how each side learns of the other's). When the listener offers
     * same-host workers and this side can use them ({@link SameHost}), the comm runs on the worker kept
     * for the listener's process instead of the shared one (and holds that runtime instead of
     * {@code rt}, which it lets go, with {@code myTag}, once the comm exists).
     */
    private UcxComm connectThroughSocket(
            UcxRuntime rt,
            URI address,
            InetSocketAddress target,
            CommOptions options,
            long myTag,
            EndpointErrorHandler onError,
            AtomicReference<SocketChannel> socket,
            AtomicReference<UcxEndpoint> ep,
            AtomicBoolean handedOver)
            throws Exception {
        SocketChannel ch = SocketChannel.open();
        socket.set(ch);
        try {
            ch.connect(target);
        } catch (IOException e) {
            throw new CommException("cannot connect to " + address + ": " + describeConnect(e), e);
        }
        URI peer = Addresses.uri(address.getScheme().toLowerCase(java.util.Locale.ROOT), target);
        SameHostSide side = new SameHostSide();
        try {
            Handshake.Result r =
                    Handshake.client(new StreamHandshakeChannel(ch), options, 0, peer.toString(), null, offer -> {
                        java.util.Optional<String> process = SameHost.local(ch.getRemoteAddress(), ch.getLocalAddress())
                                ? sameHostPeer(rt, options, offer)
                                : java.util.Optional.empty();
                        if (process.isPresent()) {
                            try {
                                side.take(runtimes.acquireSameHost(rt, process.get()));
                                return side.endpoint(SameHost.token(runtimes.process()));
                            } catch (RuntimeException e) {
                                // At the cap, or no worker to be had (descriptors, shared memory): decline.
                                side.letGo();
                                LOG.debug(
                                        "{}: no same-host worker ({}); the shared worker then", address, e.toString());
                            }
                        }
                        return new Handshake.Endpoint(myTag, rt.worker.address().bytes());
                    });
            UcxRuntime use = side.rt != null ? side.rt : rt;
            long tag = side.rt != null ? side.tag : myTag;
            if (side.rt != null
                    && !SameHost.peerProcess(r.peerEndpoint().sameHost(), runtimes.process())
                            .equals(java.util.Optional.of(side.rt.key.peerProcess()))) {
                throw new CommProtocolException("the listener's same-host token names another process than its offer");
            }
            WorkerAddress listenerWorker = peerWorker(r.peerEndpoint(), "listener");
            UcxEndpoint e = use.worker.await(use.worker.connectAsync(listenerWorker, onError));
            ep.set(e);
            URI local = parseOr(r.addressSeenByPeer(), peer);
            UcxComm c = new UcxComm(e, tag, r.peerTag(), options, local, peer, r.peerIdentity(), use, null, ch);
            handedOver.set(true);
            side.rt = null; // the comm holds it now
            if (use != rt) {
                rt.releaseTag(myTag);
                rt.release();
            }
            return c;
        } catch (Throwable t) {
            if (side.rt != null) {
                forceClose(ep.getAndSet(null));
                side.letGo();
            }
            throw t;
        }
    }

    /**
     * The same-host worker a socket comm being made took ({@link UcxRuntimes#acquireSameHost}) and the tag
     * drawn there, until the comm holds them; null while the comm uses the shared runtime.
     */
    private static final class SameHostSide {
        UcxRuntime rt;
        long tag;

        void take(UcxRuntime sameHost) {
            rt = sameHost;
            tag = sameHost.nextTag();
        }

        Handshake.Endpoint endpoint(byte[] token) {
            return new Handshake.Endpoint(tag, rt.worker.address().bytes(), token);
        }

        /** The comm was not made: gives the tag and the runtime back. */
        void letGo() {
            if (rt != null) {
                rt.releaseTag(tag);
                rt.release();
                rt = null;
            }
        }
    }

    /**
     * The peer process of a listener's offer when this side takes it: same-host workers wanted here
     * ({@link SameHost#wanted}), shared memory among the shared runtime's transports, and a token naming
     * another process of this host; else empty.
     */
    private java.util.Optional<String> sameHostPeer(UcxRuntime rt, CommOptions options, Handshake.Endpoint offer) {
        if (!offer.isSameHost()
                || !SameHost.wanted(options)
                || rt.sameHostTransports().isEmpty()) {
            return java.util.Optional.empty();
        }
        return SameHost.peerProcess(offer.sameHost(), runtimes.process());
    }

    /**
     * {@code ucx-worker://}: the handshake as tag messages, the client's HELLO to the listener's accept
     * tag; the handshake's tags are not the comm's, which each side gives only after the proofs.
     */
    private static UcxComm connectIpless(
            UcxRuntime rt,
            URI address,
            IplessAddress wa,
            CommOptions options,
            long myTag,
            EndpointErrorHandler onError,
            AtomicReference<UcxEndpoint> ep,
            AtomicBoolean handedOver)
            throws Exception {
        UcxEndpoint e = rt.worker.await(rt.worker.connectAsync(wa.worker(), onError));
        ep.set(e);
        long helloTag = rt.nextTag();
        try {
            UcxTagChannel ch = new UcxTagChannel(e, helloTag, wa.acceptTag());
            Handshake.Result r = Handshake.client(
                    ch,
                    options,
                    helloTag,
                    address.toString(),
                    rt.worker.address().bytes(),
                    offer -> new Handshake.Endpoint(myTag, new byte[0]));
            requireTag(r.peerEndpoint(), "listener");
            URI local = workerUri(rt.worker.address(), 0);
            UcxComm c = new UcxComm(e, myTag, r.peerTag(), options, local, address, r.peerIdentity(), rt, null, null);
            handedOver.set(true);
            return c;
        } finally {
            rt.releaseTag(helloTag);
        }
    }

    /** The peer's comm tag must be there: a peer that gives none does not speak this transport. */
    private static void requireTag(Handshake.Endpoint e, String peer) {
        if (e.tag() == 0) {
            throw new CommProtocolException("the " + peer + " gave no comm tag in the handshake");
        }
    }

    /** An authenticated peer's worker address (UCX aborts on a malformed one: only trusted peers get here). */
    private static WorkerAddress peerWorker(Handshake.Endpoint e, String peer) {
        requireTag(e, peer);
        if (e.workerAddress().length == 0) {
            throw new CommProtocolException("the " + peer + " gave no UCX worker address in the handshake");
        }
        return WorkerAddress.of(e.workerAddress());
    }

    private static String describeConnect(IOException e) {
        return e instanceof java.net.ConnectException ? "connection refused (nothing listens there?)" : e.toString();
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
        ServerSocketChannel server;
        try {
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(bind, 1024);
        } catch (IOException e) {
            throw new CommException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
        UcxRuntime rt;
        try {
            rt = runtimes.acquire(options.config());
        } catch (RuntimeException e) {
            TcpTransport.closeQuietly(server);
            throw e;
        }
        try {
            Listener l = new Listener(
                    runtimes, rt, address.getScheme().toLowerCase(java.util.Locale.ROOT), server, handler, options);
            if (options.secret().isEmpty() && !bind.getAddress().isLoopbackAddress()) {
                LOG.warn(
                        "{}: no shared secret (auth.secret): every client that can reach this port is trusted,"
                                + " with the UCX worker address it gives too; see docs/WIRE.md (threat model)",
                        l.address());
            }
            Thread.ofVirtual().name("ucx4j-ucx-accept-" + l.address().getPort()).start(l::acceptLoop);
            return l;
        } catch (RuntimeException e) {
            TcpTransport.closeQuietly(server);
            rt.release();
            if (e instanceof UcxException ue) {
                throw new CommException("cannot listen on " + address + ": " + ue.getMessage(), ue);
            }
            throw e;
        }
    }

    /**
     * A {@code ucx://} listener: a plain TCP socket of the JVM's, on which each client's handshake runs
     * (bounded in time by {@code connect-timeout} and in number by {@code max-pending-handshakes}, and
     * per source address by {@code max-pending-handshakes-per-source}; refusals logged rate-limited);
     * only an authenticated client's UCX worker address reaches UCX, which then connects to it. UCX's
     * own listener (its socket connection manager) is not used: it was not written for strangers
     * (docs/WIRE.md, threat model). It also accepts IP-less clients on an accept tag of its own.
     * It holds the runtime until it is closed and its accept receive is gone; each accepted comm holds
     * it too, or, when the comm runs on a same-host worker ({@link SameHost}), that worker's runtime.
     */
    static final class Listener implements CommListener {
        private final UcxRuntimes runtimes;
        private final UcxRuntime rt;
        /** Whether this listener offers same-host workers to local socket clients ({@link SameHost}). */
        private final boolean offersSameHost;

        private final String scheme;
        private final CommHandler handler;
        private final CommOptions options;
        private final UcxWorker worker;
        private final ServerSocketChannel server;
        private final long acceptTag;
        private final URI uri;
        private final URI workerUri;
        private final AtomicBoolean closed = new AtomicBoolean();
        /** Handshakes under way (socket and IP-less together), and what was refused. */
        private final HandshakeGate gate;
        /** Bytes this listener's comms receive ahead of their readers ({@code max-in-flight-per-listener}). */
        private final InFlightBudget inFlight;

        private final Arena acceptArena = Arena.ofShared();
        private final MemorySegment acceptBuffer = acceptArena.allocate(HandshakeChannel.MAX_RECORD);
        private final AtomicReference<CompletableFuture<TagInfo>> acceptRecv = new AtomicReference<>();

        Listener(
                UcxRuntimes runtimes,
                UcxRuntime rt,
                String scheme,
                ServerSocketChannel server,
                CommHandler handler,
                CommOptions options) {
            this.runtimes = runtimes;
            this.rt = rt;
            this.offersSameHost =
                    SameHost.wanted(options) && !rt.sameHostTransports().isEmpty();
            this.acceptTag = rt.nextAcceptTag();
            this.scheme = scheme;
            this.handler = handler;
            this.options = options;
            this.worker = rt.worker;
            this.server = server;
            this.inFlight = new InFlightBudget(options.maxInFlightPerListener());
            try {
                this.uri = Addresses.uri(scheme, (InetSocketAddress) server.getLocalAddress());
            } catch (IOException e) {
                acceptArena.close();
                throw new CommException("cannot listen: " + e.getMessage(), e);
            }
            this.workerUri = workerUri(worker.address(), acceptTag);
            this.gate = new HandshakeGate(LOG, uri.toString(), options);
            postAccept();
        }

        void acceptLoop() {
            while (!closed.get()) {
                SocketChannel c;
                try {
                    c = server.accept();
                } catch (ClosedChannelException e) {
                    return;
                } catch (IOException e) {
                    if (closed.get()) {
                        return;
                    }
                    LOG.warn("{}: accept failed: {}", uri, e.toString());
                    continue;
                }
                HandshakeSlots.Slot slot = gate.admit(TcpTransport.remoteAddress(c), "a connection");
                if (slot == null) {
                    TcpTransport.closeQuietly(c);
                    continue;
                }
                Thread.ofVirtual().name("ucx4j-ucx-accepted").start(() -> serve(c, slot));
            }
        }

        /**
         * Runs one socket client's handshake; the socket goes to the comm, or is closed on failure.
         * Holds its handshake slot until the handshake's end.
         */
        private void serve(SocketChannel c, HandshakeSlots.Slot slot) {
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            AtomicReference<UcxEndpoint> ep = new AtomicReference<>();
            long myTag = rt.nextTag();
            URI peer = URI.create(scheme + "://unknown:0");
            SameHostSide side = new SameHostSide();
            UcxComm made;
            try {
                peer = Addresses.uri(scheme, (InetSocketAddress) c.getRemoteAddress());
                URI p = peer;
                made = Watchdog.within(
                        options.connectTimeout(),
                        "handshake with " + peer,
                        () -> {
                            TcpTransport.closeQuietly(c);
                            forceClose(ep.get());
                        },
                        slot,
                        () -> {
                            // Within the deadline: the room check may wait while another handshake makes a
                            // same-host worker (under the runtimes' lock).
                            Handshake.Endpoint offer = offerFor(c);
                            Handshake.Result r = Handshake.listener(
                                    new StreamHandshakeChannel(c), options, 0, p.toString(), null, offer, client -> {
                                        if (client.isSameHost()) {
                                            side.take(runtimes.acquireSameHost(rt, sameHostClient(client)));
                                        }
                                        UcxWorker w = side.rt != null ? side.rt.worker : worker;
                                        ep.set(w.await(w.connectAsync(
                                                peerWorker(client, "client"), (e, err) -> onError(comm, err))));
                                        return side.rt != null
                                                ? side.endpoint(offer.sameHost())
                                                : new Handshake.Endpoint(
                                                        myTag, worker.address().bytes());
                                    });
                            URI local = parseOr(r.addressSeenByPeer(), uri);
                            if (side.rt != null) {
                                // The same-host runtime is held for this comm already (acquireSameHost).
                                UcxComm sameHost = comm(side.rt, ep.get(), side.tag, r, local, p, c);
                                side.rt = null; // the comm holds it now
                                rt.releaseTag(myTag);
                                return sameHost;
                            }
                            return accepted(ep.get(), myTag, r, local, p, c);
                        });
            } catch (Exception e) {
                gate.refused("handshake failed", e.getMessage(), "refused a connection from {}: {}", peer);
                TcpTransport.closeQuietly(c);
                forceClose(ep.get());
                side.letGo();
                rt.releaseTag(myTag);
                return;
            } finally {
                slot.close();
            }
            comm.set(made);
            Listeners.runHandler(handler, made, uri);
        }

        /**
         * The process a client's same-host token names: one of this host, not this comm context (only a
         * listener that offered gets here: {@link Handshake} refuses a token without an offer).
         */
        private String sameHostClient(Handshake.Endpoint client) {
            return SameHost.peerProcess(client.sameHost(), runtimes.process())
                    .orElseThrow(() -> new CommProtocolException(
                            "the client's same-host token does not name another process of this host"
                                    + " (with this UCX version and shared memory settings)"));
        }

        /** The comm of an accepted connection on the shared worker; it holds the runtime until it is released. */
        private UcxComm accepted(
                UcxEndpoint ep, long myTag, Handshake.Result r, URI local, URI peer, SocketChannel control) {
            rt.retain();
            try {
                return comm(rt, ep, myTag, r, local, peer, control);
            } catch (RuntimeException e) {
                rt.release();
                throw e;
            }
        }

        /** An accepted comm on {@code runtime}'s worker, which the caller holds for it. */
        private UcxComm comm(
                UcxRuntime runtime,
                UcxEndpoint ep,
                long myTag,
                Handshake.Result r,
                URI local,
                URI peer,
                SocketChannel control) {
            return new UcxComm(
                    ep, myTag, r.peerTag(), options, local, peer, r.peerIdentity(), runtime, inFlight, control);
        }

        /** Waits for the next IP-less client's HELLO on the accept tag. */
        private void postAccept() {
            if (closed.get()) {
                acceptGone();
                return;
            }
            CompletableFuture<TagInfo> f;
            try {
                f = worker.tagRecvAsync(acceptBuffer, acceptTag, -1L);
            } catch (RuntimeException e) { // the worker is closing
                LOG.warn("{}: cannot receive IP-less clients any more: {}", workerUri, e.toString());
                acceptGone();
                return;
            }
            acceptRecv.set(f);
            if (closed.get()) {
                // close() may have looked before the set: cancel ourselves (twice is harmless).
                f.cancel(false);
            }
            f.whenComplete((info, err) -> {
                if (closed.get()) {
                    acceptGone();
                    return;
                }
                if (err != null) {
                    // A message too long for the buffer (UCX: truncated) or not a HELLO at all comes from
                    // someone who is not an honest client: that message is gone, the next is awaited.
                    gate.refused(
                            "accept-tag message dropped",
                            "a message to the accept tag: " + Failures.describe(err),
                            "dropped {}");
                    postAccept();
                    return;
                }
                byte[] hello = acceptBuffer.asSlice(0, info.length()).toArray(ValueLayout.JAVA_BYTE);
                postAccept();
                // An IP-less HELLO has no source address anyone vouches for: it counts against the total.
                HandshakeSlots.Slot slot = gate.admit(null, "an IP-less client");
                if (slot == null) {
                    return;
                }
                Thread.ofVirtual().name("ucx4j-ucx-worker-accepted").start(() -> {
                    try {
                        acceptIpless(hello, slot);
                    } finally {
                        slot.close();
                    }
                });
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

        /**
         * One IP-less client's handshake. Its HELLO names its worker address, which the listener must
         * connect to before it can answer: with a secret, the HELLO's MAC over that address is checked
         * first, so that only a holder of the secret gets an address to UCX.
         */
        private void acceptIpless(byte[] hello, HandshakeSlots.Slot slot) {
            AtomicReference<UcxEndpoint> ep = new AtomicReference<>();
            AtomicReference<UcxComm> comm = new AtomicReference<>();
            CompletableFuture<Void> peerGone = new CompletableFuture<>();
            long helloTag = rt.nextTag();
            long myTag = rt.nextTag();
            UcxComm c;
            try {
                Handshake.Hello h = Handshake.parseHello(hello);
                if (h.workerAddress() == null) {
                    throw new CommException("an IP-less client sent no worker address");
                }
                Handshake.checkIplessHello(h, options);
                WorkerAddress clientAddress = WorkerAddress.of(h.workerAddress());
                URI peer = workerUri(clientAddress, 0);
                c = Watchdog.within(
                        options.connectTimeout(), "handshake with " + peer, () -> forceClose(ep.get()), slot, () -> {
                            UcxEndpoint e = worker.await(
                                    worker.connectAsync(clientAddress, acceptedErrorHandler(comm, peerGone)));
                            ep.set(e);
                            UcxTagChannel ch = new UcxTagChannel(e, helloTag, h.tag());
                            Handshake.Result r = Handshake.listener(
                                    ch, options, helloTag, peer.toString(), hello, Handshake.Endpoint.NONE, client -> {
                                        requireTag(client, "client");
                                        return new Handshake.Endpoint(myTag, new byte[0]);
                                    });
                            return accepted(e, myTag, r, workerUri, peer, null);
                        });
            } catch (RuntimeException e) {
                gate.refused("IP-less handshake failed", e.getMessage(), "refused an IP-less connection: {}");
                rt.releaseTag(myTag);
                closeAfterRefusal(ep.get(), peerGone);
                return;
            } finally {
                rt.releaseTag(helloTag);
            }
            comm.set(c);
            Listeners.runHandler(handler, c, workerUri);
        }

        /** How many connections and accept-tag messages this listener refused. */
        long refusals() {
            return gate.refusals();
        }

        /** Why it refused the last one. */
        String lastRefusal() {
            return gate.lastRefusal();
        }

        /** The handshake slots and refusals, for tests. */
        HandshakeGate gate() {
            return gate;
        }

        /** The bytes this listener's comms hold for messages received ahead of their readers. */
        InFlightBudget inFlight() {
            return inFlight;
        }

        /**
         * What this listener's PROOF offers a socket client: its same-host token when it offers same-host
         * workers, the connection stayed on this host, and this comm context has room for one more (else
         * nothing: the client then stays on the shared worker).
         */
        Handshake.Endpoint offerFor(SocketChannel c) throws IOException {
            return offersSameHost
                            && SameHost.local(c.getRemoteAddress(), c.getLocalAddress())
                            && runtimes.roomForSameHost()
                    ? Handshake.Endpoint.offer(SameHost.token(runtimes.process()))
                    : Handshake.Endpoint.NONE;
        }

        /** Whether this listener offers same-host workers at all (for tests). */
        boolean offersSameHost() {
            return offersSameHost;
        }

        /** This listener's comm context's runtimes (for tests). */
        UcxRuntimes runtimes() {
            return runtimes;
        }

        /** The runtime whose worker this listener's comms use. */
        UcxRuntime runtime() {
            return rt;
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
            TcpTransport.closeQuietly(server);
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
