package org.ucx4j.cluster;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.Semaphore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The launcher's side of the rendezvous: workers of one launch connect, prove they hold the launch's token,
 * and then run collectives ({@link Cluster#allGather}) through it, so that each learns the others'
 * addresses. {@code ucx4j launch} starts one per launch; programs use {@link Cluster}.
 *
 * <p>Not an open door: it listens on the address it is given (the launcher's default is loopback), a
 * connection must send the 32-byte token within {@link #HELLO_TIMEOUT_MILLIS} ms (compared in constant
 * time) before anything else is read, at most {@link #MAX_PENDING_HELLOS} connections may be waiting
 * for their hello at once, each rank joins once, and every length a peer sends is bounded
 * ({@link RendezvousWire}).
 *
 * <p>Threading: the accept loop runs on a platform thread, each connection on a virtual thread; every
 * method is safe from any thread. Ownership: the caller closes it, which closes every connection.
 */
public final class RendezvousServer implements AutoCloseable {
    /** How long a new connection may take to send its hello. */
    public static final int HELLO_TIMEOUT_MILLIS = 10_000;
    /** How many connections may be waiting for their hello at once; more are closed at once. */
    public static final int MAX_PENDING_HELLOS = 64;

    private static final Logger LOG = LoggerFactory.getLogger(RendezvousServer.class);

    private final ServerSocket server;
    private final int size;
    private final byte[] token;
    private final Semaphore pendingHellos = new Semaphore(MAX_PENDING_HELLOS);
    private final Member[] members;
    private final Map<Integer, byte[][]> rounds = new HashMap<>();
    private final Map<Integer, Integer> roundCounts = new HashMap<>();
    /** Rounds completed so far (guarded by this): their values go to every member before any failure. */
    private int roundsCompleted;

    private String failure;
    private boolean closed;

    private RendezvousServer(ServerSocket server, int size, byte[] token) {
        this.server = server;
        this.size = size;
        this.token = token.clone();
        this.members = new Member[size];
    }

    /**
     * A fresh random token (32 bytes from {@link SecureRandom}).
     *
     * @return the token
     */
    public static byte[] newToken() {
        byte[] t = new byte[RendezvousWire.TOKEN_BYTES];
        new SecureRandom().nextBytes(t);
        return t;
    }

    /**
     * The token as workers receive it in {@link Cluster#ENV_TOKEN}.
     *
     * @param token the token
     * @return 64 lower-case hex digits
     */
    public static String tokenText(byte[] token) {
        return HexFormat.of().formatHex(token);
    }

    /**
     * Starts listening.
     *
     * @param bind the local address to listen on (loopback unless workers run on other hosts)
     * @param size how many workers will join (ranks {@code 0..size-1})
     * @param token the secret the workers must present, {@link #newToken()}
     * @return the running server
     * @throws IllegalArgumentException for a size outside 1..4096 or a token not of 32 bytes
     * @throws IOException when the address cannot be bound
     */
    public static RendezvousServer start(InetAddress bind, int size, byte[] token) throws IOException {
        if (size < 1 || size > RendezvousWire.MAX_SIZE) {
            throw new IllegalArgumentException("cluster size " + size + " (1.." + RendezvousWire.MAX_SIZE + ")");
        }
        if (token.length != RendezvousWire.TOKEN_BYTES) {
            throw new IllegalArgumentException("the token must be " + RendezvousWire.TOKEN_BYTES + " bytes");
        }
        ServerSocket s = new ServerSocket();
        try {
            s.bind(new InetSocketAddress(bind, 0), MAX_PENDING_HELLOS);
        } catch (IOException e) {
            s.close();
            throw e;
        }
        RendezvousServer r = new RendezvousServer(s, size, token);
        Thread.ofPlatform().daemon(true).name("ucx4j-rendezvous-accept").start(r::acceptLoop);
        return r;
    }

    /**
     * Where workers connect, as {@link Cluster#ENV_RENDEZVOUS} holds it.
     *
     * @return {@code host:port}, IPv6 hosts in brackets
     */
    public String address() {
        InetAddress a = server.getInetAddress();
        String host = a.getHostAddress();
        if (host.contains(":")) {
            host = "[" + host + "]";
        }
        return host + ":" + server.getLocalPort();
    }

    /**
     * How many workers have joined so far.
     *
     * @return 0..size
     */
    public synchronized int joined() {
        return (int) Arrays.stream(members).filter(m -> m != null).count();
    }

    /** Stops listening and closes every worker's connection. Idempotent. */
    @Override
    public void close() {
        Member[] copy;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            copy = members.clone();
        }
        try {
            server.close();
        } catch (IOException ignored) {
            // closing: nothing left to do with it
        }
        for (Member m : copy) {
            if (m != null) {
                m.closeQuietly();
            }
        }
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            if (!pendingHellos.tryAcquire()) {
                closeQuietly(s);
                continue;
            }
            Thread.ofVirtual().name("ucx4j-rendezvous-" + s.getPort()).start(() -> serve(s));
        }
    }

    private void serve(Socket s) {
        Member member;
        DataInputStream in;
        try {
            s.setSoTimeout(HELLO_TIMEOUT_MILLIS);
            s.setTcpNoDelay(true);
            in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            byte[] magic = RendezvousWire.readBytes(in, RendezvousWire.MAGIC.length);
            byte[] presented = RendezvousWire.readBytes(in, RendezvousWire.TOKEN_BYTES);
            int rank = in.readInt();
            if (!Arrays.equals(magic, RendezvousWire.MAGIC) || !MessageDigest.isEqual(presented, token)) {
                // Nothing is said to a peer without the token.
                LOG.warn(
                        "rendezvous: refused a connection from {} without the launch's token",
                        s.getRemoteSocketAddress());
                closeQuietly(s);
                return;
            }
            member = new Member(rank, s, out);
            String refusal = admit(member);
            if (refusal != null) {
                member.send(RendezvousWire.ERROR, refusal);
                closeQuietly(s);
                return;
            }
            synchronized (member) {
                out.writeInt(RendezvousWire.OK);
                out.writeInt(size);
                out.flush();
            }
            s.setSoTimeout(0);
        } catch (SocketTimeoutException e) {
            LOG.warn("rendezvous: {} sent no hello within {} ms", s.getRemoteSocketAddress(), HELLO_TIMEOUT_MILLIS);
            closeQuietly(s);
            return;
        } catch (IOException e) {
            closeQuietly(s);
            return;
        } finally {
            pendingHellos.release();
        }
        String why = "closed its connection";
        try {
            for (int round = 0; ; round++) {
                byte[] value = RendezvousWire.readValue(in, RendezvousWire.MAX_VALUE);
                contribute(member, round, value);
            }
        } catch (IOException e) {
            if (!(e instanceof java.io.EOFException)) {
                why = "lost its connection (" + e.getMessage() + ")";
            }
        }
        leave(member, why);
    }

    private synchronized String admit(Member m) {
        if (closed) {
            return "the launcher is stopping";
        }
        if (failure != null) {
            return failure;
        }
        if (m.rank < 0 || m.rank >= size) {
            return "rank " + m.rank + " is outside 0.." + (size - 1);
        }
        if (members[m.rank] != null) {
            return "rank " + m.rank + " has already joined";
        }
        members[m.rank] = m;
        return null;
    }

    private void contribute(Member m, int round, byte[] value) {
        byte[][] complete = null;
        Member[] to = null;
        synchronized (this) {
            if (failure != null || closed) {
                return; // this rank was told already
            }
            byte[][] values = rounds.computeIfAbsent(round, r -> new byte[size][]);
            values[m.rank] = value;
            int n = roundCounts.merge(round, 1, Integer::sum);
            if (n == size) {
                complete = values;
                rounds.remove(round);
                roundCounts.remove(round);
                roundsCompleted++;
                to = members.clone();
            }
        }
        if (complete != null) {
            for (Member each : to) {
                each.sendRound(complete);
            }
        }
    }

    private void leave(Member m, String why) {
        Member[] others;
        String message;
        int completed;
        synchronized (this) {
            if (failure != null || closed) {
                m.closeQuietly();
                return;
            }
            message = "rank " + m.rank + " " + why + ": the cluster can no longer run collectives";
            failure = message;
            others = members.clone();
            completed = roundsCompleted;
        }
        m.closeQuietly();
        for (Member o : others) {
            if (o != null && o != m) {
                // A rank that leaves right after the last round (its result written first) must not
                // overtake that round's result to the others, still being written by another thread.
                o.failAfter(message, completed);
            }
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    /** One joined worker: its connection, written under its own lock (package-private for its test). */
    static final class Member {
        final int rank;
        final Socket socket;
        final DataOutputStream out;

        Member(int rank, Socket socket, DataOutputStream out) {
            this.rank = rank;
            this.socket = socket;
            this.out = out;
        }

        synchronized void send(int status, String message) {
            try {
                out.writeInt(status);
                out.writeUTF(message);
                out.flush();
            } catch (IOException ignored) {
                // the worker is gone; its own reader notices
            }
        }

        /** Rounds whose values were written to this worker (guarded by this member). */
        private int roundsSent;
        /** The failure to tell once {@link #failAfterRounds} rounds were written, or null. */
        private String pendingFailure;

        private int failAfterRounds;

        /**
         * Tells this worker the cluster failed, after the values of the first {@code rounds} rounds (now,
         * or once the thread writing the last of them has).
         */
        synchronized void failAfter(String message, int rounds) {
            if (roundsSent >= rounds) {
                send(RendezvousWire.ERROR, message);
                shutdownOutput();
            } else {
                pendingFailure = message;
                failAfterRounds = rounds;
            }
        }

        synchronized void sendRound(byte[][] values) {
            try {
                writeRound(values);
            } finally {
                roundsSent++;
                if (pendingFailure != null && roundsSent >= failAfterRounds) {
                    send(RendezvousWire.ERROR, pendingFailure);
                    shutdownOutput();
                    pendingFailure = null;
                }
            }
        }

        private void writeRound(byte[][] values) {
            try {
                out.writeInt(RendezvousWire.OK);
                out.writeInt(values.length);
                for (byte[] v : values) {
                    out.writeInt(v.length);
                    out.write(v);
                }
                out.flush();
            } catch (IOException ignored) {
                // the worker is gone; its own reader notices
            }
        }

        synchronized void shutdownOutput() {
            try {
                socket.shutdownOutput();
            } catch (IOException ignored) {
                // already closed
            }
        }

        void closeQuietly() {
            RendezvousServer.closeQuietly(socket);
        }
    }
}
