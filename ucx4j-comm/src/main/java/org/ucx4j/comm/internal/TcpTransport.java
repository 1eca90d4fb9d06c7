package org.ucx4j.comm.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommHandler;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;

/**
 * {@code tcp://host:port}: NIO sockets with TCP_NODELAY, the baseline and the reference implementation
 * of the wire format. Public for {@link java.util.ServiceLoader}; use {@link org.ucx4j.comm.Comms}.
 */
public final class TcpTransport implements org.ucx4j.comm.spi.Transport {
    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
    static final String SCHEME = "tcp";

    /** Creates the transport (ServiceLoader). */
    public TcpTransport() {}

    /** The arenas this instance's comms receive into (its {@link org.ucx4j.comm.CommContext}'s). */
    private final MessageScopes scopes = new MessageScopes();

    /** New messages start fresh slabs; the current ones close with their last message. */
    @Override
    public void close() {
        scopes.startAfresh();
    }

    @Override
    public Set<String> schemes() {
        return Set.of(SCHEME);
    }

    @Override
    public CommListener listen(URI address, CommHandler handler, CommOptions options) {
        InetSocketAddress bind = Addresses.socketAddress(address);
        ServerSocketChannel server;
        try {
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(bind, 1024);
        } catch (IOException e) {
            throw new CommException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
        Listener l;
        try {
            l = new Listener(server, scopes, handler, options);
        } catch (IOException e) {
            closeQuietly(server);
            throw new CommException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
        Thread t = new Thread(l::acceptLoop, "ucx4j-tcp-accept-" + l.address.getPort());
        t.setDaemon(true);
        t.start();
        return l;
    }

    @Override
    public CompletableFuture<Comm> connectAsync(URI address, CommOptions options) {
        InetSocketAddress target;
        try {
            target = Addresses.socketAddress(address);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<Comm> f = new CompletableFuture<>();
        Thread.ofVirtual().name("ucx4j-tcp-connect").start(() -> {
            SocketChannel ch = null;
            try {
                SocketChannel c = SocketChannel.open();
                ch = c;
                Comm comm = Watchdog.within(
                        options.connectTimeout(), "connecting to " + address, () -> closeQuietly(c), () -> {
                            try {
                                c.connect(target);
                            } catch (IOException e) {
                                throw new CommException("cannot connect to " + address + ": " + describeConnect(e), e);
                            }
                            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
                            URI local = Addresses.uri(SCHEME, (InetSocketAddress) c.getLocalAddress());
                            URI peer = Addresses.uri(SCHEME, (InetSocketAddress) c.getRemoteAddress());
                            Handshake.Result r =
                                    Handshake.client(new StreamHandshakeChannel(c), options, 0, peer.toString(), null);
                            return new TcpComm(c, scopes, options, local, peer, r.peerIdentity(), null);
                        });
                if (!f.complete(comm)) {
                    comm.abort();
                }
            } catch (Throwable t) {
                closeQuietly(ch);
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    private static String describeConnect(IOException e) {
        return e instanceof java.net.ConnectException ? "connection refused (nothing listens there?)" : e.toString();
    }

    /** A connection's remote address, or null when the socket cannot say (it is already closed). */
    static java.net.SocketAddress remoteAddress(SocketChannel c) {
        try {
            return c.getRemoteAddress();
        } catch (IOException e) {
            return null;
        }
    }

    static void closeQuietly(java.io.Closeable c) {
        if (c != null) {
            try {
                c.close();
            } catch (IOException ignored) {
                // closing on an error path
            }
        }
    }

    /** A listening socket, its accept thread, and the in-flight budget its comms share. */
    static final class Listener implements CommListener {
        private final ServerSocketChannel server;
        private final MessageScopes scopes;
        private final CommHandler handler;
        private final CommOptions options;
        private final InetSocketAddress address;
        private final URI uri;
        private final AtomicBoolean closed = new AtomicBoolean();
        /** Bytes all accepted comms receive at once ({@code max-in-flight-per-listener}). */
        private final InFlightBudget inFlight;
        /** Handshakes under way ({@code max-pending-handshakes}, per source and in all), and refusals. */
        private final HandshakeGate gate;

        Listener(ServerSocketChannel server, MessageScopes scopes, CommHandler handler, CommOptions options)
                throws IOException {
            this.server = server;
            this.scopes = scopes;
            this.handler = handler;
            this.options = options;
            this.address = (InetSocketAddress) server.getLocalAddress();
            this.uri = Addresses.uri(SCHEME, address);
            this.inFlight = new InFlightBudget(options.maxInFlightPerListener());
            this.gate = new HandshakeGate(LOG, uri.toString(), options);
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
                HandshakeSlots.Slot slot = gate.admit(remoteAddress(c), "a connection");
                if (slot == null) {
                    closeQuietly(c);
                    continue;
                }
                Thread.ofVirtual().name("ucx4j-tcp-accepted").start(() -> serve(c, slot));
            }
        }

        /** Runs one client's handshake, holding its slot until the handshake's end. */
        private void serve(SocketChannel c, HandshakeSlots.Slot slot) {
            TcpComm comm;
            try {
                comm = Watchdog.within(
                        options.connectTimeout(),
                        "handshake with a client of " + uri,
                        () -> closeQuietly(c),
                        slot,
                        () -> {
                            c.setOption(StandardSocketOptions.TCP_NODELAY, true);
                            URI local = Addresses.uri(SCHEME, (InetSocketAddress) c.getLocalAddress());
                            URI peer = Addresses.uri(SCHEME, (InetSocketAddress) c.getRemoteAddress());
                            Handshake.Result r = Handshake.listener(
                                    new StreamHandshakeChannel(c), options, 0, peer.toString(), null);
                            return new TcpComm(c, scopes, options, local, peer, r.peerIdentity(), inFlight);
                        });
            } catch (RuntimeException e) {
                gate.refused("handshake failed", e.getMessage(), "refused a connection: {}");
                closeQuietly(c);
                return;
            } finally {
                slot.close();
            }
            Listeners.runHandler(handler, comm, uri);
        }

        /** The handshake slots and refusals, for tests. */
        HandshakeGate gate() {
            return gate;
        }

        @Override
        public URI address() {
            return uri;
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                closeQuietly(server);
            }
        }

        @Override
        public String toString() {
            return Listeners.describe(uri, closed.get());
        }
    }
}
