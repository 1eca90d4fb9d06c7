package org.ucx4j.comm.internal;

import java.io.EOFException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.ucx4j.MemoryKind;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommClosedException;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommHandler;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;

/**
 * {@code inproc://name}: comms inside one JVM, for tests and for components that may or may not run in
 * the same process. The handshake (and its secret check) runs as on the other transports; a write
 * copies the frames into memory from the receiver's allocator, so the writer may reuse its buffers as
 * soon as the write completes, exactly as elsewhere. Messages a reader has not taken yet are queued
 * without bound (there is no network to hold the writer back). Host frames only.
 * Public for {@link java.util.ServiceLoader}; use {@link org.ucx4j.comm.Comms}.
 */
public final class InprocTransport implements org.ucx4j.comm.spi.Transport {
    static final String SCHEME = "inproc";
    /** This instance's listeners by name: inproc:// names are those of one {@link org.ucx4j.comm.CommContext}. */
    private final ConcurrentHashMap<String, Listener> listeners = new ConcurrentHashMap<>();

    private final AtomicLong names = new AtomicLong();
    /** The arenas this instance's comms receive into. */
    private final MessageScopes scopes = new MessageScopes();

    private static final byte[] EOF = new byte[0];

    /** Creates the transport (ServiceLoader). */
    public InprocTransport() {}

    /** New messages start fresh slabs; listeners stay until closed, as their owners hold them. */
    @Override
    public void close() {
        scopes.startAfresh();
    }

    @Override
    public Set<String> schemes() {
        return Set.of(SCHEME);
    }

    private static String name(URI address) {
        String n = address.getSchemeSpecificPart();
        if (n.startsWith("//")) {
            n = n.substring(2);
        }
        int slash = n.indexOf('/');
        return slash >= 0 ? n.substring(0, slash) : n;
    }

    @Override
    public CommListener listen(URI address, CommHandler handler, CommOptions options) {
        String name = name(address);
        if (name.isEmpty() || name.equals("0")) {
            name = "anon-" + ProcessHandle.current().pid() + "-" + names.incrementAndGet();
        }
        Listener l = new Listener(listeners, URI.create(SCHEME + "://" + name), name, handler, options);
        if (listeners.putIfAbsent(name, l) != null) {
            throw new CommException("cannot listen on " + address + ": the name is in use in this comm context");
        }
        return l;
    }

    @Override
    public CompletableFuture<Comm> connectAsync(URI address, CommOptions options) {
        Listener l = listeners.get(name(address));
        if (l == null) {
            return CompletableFuture.failedFuture(
                    new CommException("cannot connect to " + address + ": nothing listens there in this comm context"));
        }
        CompletableFuture<Comm> f = new CompletableFuture<>();
        Pipe toListener = new Pipe();
        Pipe toClient = new Pipe();
        URI clientUri = URI.create(l.uri + "/client-" + names.incrementAndGet());
        InprocComm clientComm = new InprocComm(scopes, options, clientUri, l.uri);
        InprocComm listenerComm = new InprocComm(scopes, l.options, l.uri, clientUri);
        Thread.ofVirtual().name("ucx4j-inproc-accepted").start(() -> {
            try {
                Handshake.Result r = Watchdog.within(
                        l.options.connectTimeout(),
                        "handshake with a client of " + l.uri,
                        toListener::poison,
                        () -> Handshake.listener(
                                new PipeChannel(toListener, toClient), l.options, 0, clientUri.toString(), null));
                listenerComm.connect(clientComm, r.peerIdentity());
            } catch (RuntimeException e) {
                toClient.poison();
                return;
            }
            Listeners.runHandler(l.handler, listenerComm, l.uri);
        });
        Thread.ofVirtual().name("ucx4j-inproc-connect").start(() -> {
            try {
                Handshake.Result r = Watchdog.within(
                        options.connectTimeout(),
                        "connecting to " + address,
                        toClient::poison,
                        () -> Handshake.client(
                                new PipeChannel(toClient, toListener), options, 0, l.uri.toString(), null));
                clientComm.connect(listenerComm, r.peerIdentity());
                f.complete(clientComm);
            } catch (Throwable t) {
                toListener.poison();
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    /** One direction of handshake records. */
    private static final class Pipe {
        final BlockingQueue<byte[]> records = new LinkedBlockingQueue<>();

        void poison() {
            records.add(EOF);
        }
    }

    private record PipeChannel(Pipe in, Pipe out) implements HandshakeChannel {
        @Override
        public void send(byte[] record) {
            out.records.add(record.clone());
        }

        @Override
        public byte[] receive() throws Exception {
            byte[] r = in.records.take();
            if (r == EOF) {
                in.poison();
                throw new EOFException("the other side gave up the handshake");
            }
            return r;
        }
    }

    /** One side of an in-process connection. */
    static final class InprocComm extends AbstractComm {
        private final Object lock = new Object();
        private final ArrayDeque<Message> pending = new ArrayDeque<>();
        private CommException end;
        private boolean endPeerClosed;
        private boolean waiting;
        private volatile InprocComm peer;
        private volatile String identity;

        private final MessageScopes scopes;

        InprocComm(MessageScopes scopes, CommOptions options, URI local, URI remote) {
            super(options, local, remote, null);
            this.scopes = scopes;
        }

        void connect(InprocComm other, String peerIdentity) {
            this.identity = peerIdentity;
            this.peer = other;
            start();
        }

        @Override
        public String peerIdentity() {
            return identity;
        }

        /** The peer wrote a message (already copied into this side's memory). */
        void deliver(Message m) {
            boolean now;
            synchronized (lock) {
                if (end != null) {
                    m.close();
                    return;
                }
                now = waiting;
                waiting = false;
                if (!now) {
                    pending.add(m);
                }
            }
            if (now) {
                received(m);
            }
        }

        void deliverEnd(CommException cause, boolean peerClosed) {
            boolean now;
            synchronized (lock) {
                if (end != null) {
                    return;
                }
                end = cause;
                endPeerClosed = peerClosed;
                now = waiting && pending.isEmpty();
                waiting = false;
            }
            if (now) {
                ended(cause, peerClosed);
            }
        }

        @Override
        protected void receiveOne() {
            Message m;
            CommException e = null;
            boolean peerClosed;
            synchronized (lock) {
                m = pending.poll();
                peerClosed = endPeerClosed;
                if (m == null) {
                    e = end;
                    waiting = e == null;
                }
            }
            if (m != null) {
                received(m);
            } else if (e != null) {
                ended(e, peerClosed);
            }
        }

        @Override
        protected CompletableFuture<Void> send(Message message, boolean callerWaits) {
            InprocComm p = peer;
            Arena scope = scopes.forMessage(message.byteSize(), message.frameCount());
            List<Frame> copies = new ArrayList<>(message.frameCount());
            try {
                for (int i = 0; i < message.frameCount(); i++) {
                    Frame f = message.frame(i);
                    MemorySegment dst = p.options.allocator().allocate(f.kind(), f.size(), scope);
                    if (f.kind() == MemoryKind.HOST) {
                        MemorySegment.copy(f.segment(), 0, dst, 0, f.size());
                    } else {
                        p.options.allocator().copy(f.kind(), dst, f.segment()); // device to device
                    }
                    copies.add(new Frame(dst, f.kind()));
                }
            } catch (RuntimeException e) {
                scope.close();
                throw e;
            }
            synchronized (this) {
                // Under the comm's monitor so that concurrent writers' messages keep one order.
                if (isClosed()) {
                    scope.close();
                    return CompletableFuture.failedFuture(closedError("write to"));
                }
                p.deliver(Message.received(copies, scope));
            }
            return CompletableFuture.completedFuture(null);
        }

        @Override
        protected CompletableFuture<Void> sendClose() {
            peer.deliverEnd(
                    new CommClosedException(
                            "comm " + peerAddress() + " <-> " + localAddress() + " was closed by the peer"),
                    true);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        protected void release(boolean graceful) {
            InprocComm p = peer;
            if (!graceful && p != null) {
                p.deliverEnd(
                        new CommClosedException(
                                "comm " + p.localAddress() + " <-> " + localAddress() + " lost: the peer aborted"),
                        false);
            }
            synchronized (lock) {
                if (end == null) {
                    end = new CommClosedException("comm closed");
                }
                pending.forEach(Message::close);
                pending.clear();
            }
        }
    }

    /** A name in the transport's table of inproc listeners. */
    private static final class Listener implements CommListener {
        private final Map<String, Listener> table;
        final URI uri;
        final String name;
        final CommHandler handler;
        final CommOptions options;
        private final AtomicBoolean closed = new AtomicBoolean();

        Listener(Map<String, Listener> table, URI uri, String name, CommHandler handler, CommOptions options) {
            this.table = table;
            this.uri = uri;
            this.name = name;
            this.handler = handler;
            this.options = options;
        }

        @Override
        public URI address() {
            return uri;
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                table.remove(name, this);
            }
        }

        @Override
        public String toString() {
            return Listeners.describe(uri, closed.get());
        }
    }
}
