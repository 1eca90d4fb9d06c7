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
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.ucx4j.comm.internal.RefusalLog;

/**
 * The launcher's side of the rendezvous: workers of one launch connect, prove they hold the launch's token,
 * and then run collectives ({@link Cluster#allGather}) through it, so that each learns the others'
 * addresses. {@code ucx4j launch} starts one per launch; programs use {@link Cluster}.
 *
 * <p>Not an open door: it listens on the address it is given (the launcher's default is loopback), and
 * only until every rank has joined. A connection must send its whole hello, with the 32-byte token
 * (compared in constant time), within {@link #HELLO_TIMEOUT_MILLIS} ms of being accepted, before anything
 * else is read. At most {@link #MAX_PENDING_HELLOS} connections may be waiting for their hello at once;
 * when all are taken, the oldest gives way to a newcomer once it is {@link #HELLO_EVICTION_AGE_MILLIS} ms
 * old (else the newcomer is closed, and an honest worker's {@link Cluster#join} tries again), so silent
 * connections keep no worker out unless they are opened faster than they age. Refusals are logged at a
 * bounded rate. Each rank joins once, and every length a peer sends is bounded ({@link RendezvousWire}).
 *
 * <p>A worker that holds the token is trusted with the launch, but cannot make the launcher hold more
 * than one round of values (a value for a round after the current one is a protocol error, which fails
 * the cluster naming the rank), and cannot stall the others for ever: a round's values that a worker does
 * not take within {@link #WRITE_TIMEOUT_MILLIS} ms close its connection, and the others' collectives fail
 * naming it. A worker whose connection is lost once it was admitted, even before its acknowledgement, has
 * left the cluster. A round that waits {@link #WAIT_REPORT_MILLIS} ms for its last workers is reported
 * with their ranks (a worker stuck before its collective stalls every other one). With a round timeout
 * ({@link #start(InetAddress, int, byte[], Duration)}, {@code ucx4j launch --collective-timeout}), a round
 * still waiting after it fails the cluster: every worker's collective fails naming the ranks that never
 * gave their values. Without one, a round waits for ever.
 *
 * <p>Threading: the accept loop runs on a platform thread, each connection on a virtual thread; every
 * method is safe from any thread. Ownership: the caller closes it, which closes every connection.
 */
public final class RendezvousServer implements AutoCloseable {
    /** How long a new connection may take to send its whole hello. */
    public static final int HELLO_TIMEOUT_MILLIS = 10_000;
    /** How many connections may be waiting for their hello at once (see the class comment for more). */
    public static final int MAX_PENDING_HELLOS = 64;
    /** How old the oldest waiting hello must be to give way to a newcomer when every slot is taken. */
    public static final int HELLO_EVICTION_AGE_MILLIS = 1_000;
    /** How long writing a round's values (or a failure) to one worker may take before it is cut off. */
    public static final int WRITE_TIMEOUT_MILLIS = 30_000;
    /**
     * How long a collective round may wait for its last workers before the launcher says which they are
     * (then again after twice as long, and so on, up to every 10 minutes).
     */
    public static final int WAIT_REPORT_MILLIS = 60_000;
    /** Ranks named one by one in a waiting line; the rest are counted. */
    private static final int WAIT_REPORT_RANKS = 16;

    private static final Logger LOG = LoggerFactory.getLogger(RendezvousServer.class);

    private final ServerSocket server;
    private final int size;
    private final byte[] token;
    private final Limits limits;
    /** Where warnings go: this class's logger at WARN, or the sink of the limits. */
    private final Consumer<String> warn;

    private final RefusalLog refusals;
    /** Connections waiting for their hello, oldest first (guarded by itself). */
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();

    private final Member[] members;
    private final Map<Integer, byte[][]> rounds = new HashMap<>();
    private final Map<Integer, Integer> roundCounts = new HashMap<>();
    /** Rounds completed so far (guarded by this): their values go to every member before any failure. */
    private int roundsCompleted;
    /** The report of the current round if it waits long (guarded by this; one round is open at a time). */
    private ScheduledFuture<?> waitReport;
    /** The current round's timeout, if the server has one (guarded by this). */
    private ScheduledFuture<?> roundTimeout;

    private String failure;
    private boolean closed;

    /**
     * The server's time limits, and where its warnings go: {@link #DEFAULTS} but in tests.
     *
     * @param helloTimeoutMillis {@link #HELLO_TIMEOUT_MILLIS}
     * @param evictionAgeMillis {@link #HELLO_EVICTION_AGE_MILLIS}
     * @param writeTimeoutMillis {@link #WRITE_TIMEOUT_MILLIS}
     * @param waitReportMillis {@link #WAIT_REPORT_MILLIS}
     * @param roundTimeoutMillis how long a round may wait for its last workers before the cluster fails; 0:
     *     for ever
     * @param logSink where refusal and waiting lines go, or null for this class's logger (at WARN; refusals
     *     rate-limited)
     */
    record Limits(
            int helloTimeoutMillis,
            int evictionAgeMillis,
            int writeTimeoutMillis,
            int waitReportMillis,
            long roundTimeoutMillis,
            Consumer<String> logSink) {
        static final Limits DEFAULTS = new Limits(
                HELLO_TIMEOUT_MILLIS, HELLO_EVICTION_AGE_MILLIS, WRITE_TIMEOUT_MILLIS, WAIT_REPORT_MILLIS, 0, null);

        /** These limits with a round timeout. */
        Limits withRoundTimeout(long millis) {
            return new Limits(
                    helloTimeoutMillis, evictionAgeMillis, writeTimeoutMillis, waitReportMillis, millis, logSink);
        }
    }

    /** A connection waiting for its hello, since when (nanoTime). */
    private record Pending(Socket socket, long since) {}

    private RendezvousServer(ServerSocket server, int size, byte[] token, Limits limits) {
        this.server = server;
        this.size = size;
        this.token = token.clone();
        this.limits = limits;
        this.members = new Member[size];
        String where = "rendezvous " + address();
        this.warn = limits.logSink() == null ? LOG::warn : limits.logSink();
        this.refusals = new RefusalLog(warn, where);
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
        return start(bind, size, token, Limits.DEFAULTS);
    }

    /**
     * Starts listening, with a round timeout: a collective round that some workers have not joined
     * {@code roundTimeout} after the first one did fails the cluster, and every worker's collective fails
     * naming the ranks that were missing (see the class comment).
     *
     * @param bind the local address to listen on
     * @param size how many workers will join
     * @param token the secret the workers must present
     * @param roundTimeout how long a round may wait for its last workers; zero: for ever
     * @return the running server
     * @throws IllegalArgumentException as {@link #start(InetAddress, int, byte[])}, or for a negative timeout
     * @throws IOException when the address cannot be bound
     */
    public static RendezvousServer start(InetAddress bind, int size, byte[] token, Duration roundTimeout)
            throws IOException {
        if (roundTimeout.isNegative()) {
            throw new IllegalArgumentException("a negative round timeout: " + roundTimeout);
        }
        long millis;
        try {
            millis = roundTimeout.isZero() ? 0 : Math.max(1, roundTimeout.toMillis());
        } catch (ArithmeticException beyondAnyRun) {
            millis = 0; // for ever, as far as a launch is concerned
        }
        return start(bind, size, token, Limits.DEFAULTS.withRoundTimeout(millis));
    }

    /** {@link #start(InetAddress, int, byte[])} with other limits (tests). */
    static RendezvousServer start(InetAddress bind, int size, byte[] token, Limits limits) throws IOException {
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
        RendezvousServer r = new RendezvousServer(s, size, token, limits);
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
            cancelWaitReport();
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
        List<Pending> waiting;
        synchronized (pending) {
            waiting = List.copyOf(pending);
            pending.clear();
        }
        for (Pending p : waiting) {
            closeQuietly(p.socket()); // its serve thread ends at once, not at its hello's deadline
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
            Pending p = new Pending(s, System.nanoTime());
            Pending evicted = null;
            boolean room;
            synchronized (pending) {
                Pending oldest = pending.peekFirst();
                if (pending.size() >= MAX_PENDING_HELLOS
                        && p.since() - oldest.since() >= TimeUnit.MILLISECONDS.toNanos(limits.evictionAgeMillis())) {
                    evicted = pending.pollFirst();
                }
                room = pending.size() < MAX_PENDING_HELLOS;
                if (room) {
                    pending.addLast(p);
                }
            }
            if (evicted != null) {
                refusals.refused(
                        "hello evicted",
                        "closed {}, whose hello was not complete after {} ms, for a newcomer (every slot taken)",
                        evicted.socket().getRemoteSocketAddress(),
                        TimeUnit.NANOSECONDS.toMillis(p.since() - evicted.since()));
                closeQuietly(evicted.socket());
            }
            if (!room) {
                refusals.refused(
                        "no slot",
                        "closed {} at once: {} connections are waiting for their hello",
                        s.getRemoteSocketAddress(),
                        MAX_PENDING_HELLOS);
                closeQuietly(s);
                continue;
            }
            Thread.ofVirtual().name("ucx4j-rendezvous-" + s.getPort()).start(() -> serve(p));
        }
    }

    /**
     * Reads the hello (magic, token, rank) within the hello timeout, counted from the connection's
     * accept: each read waits only for what is left of it, so a hello sent a byte at a time cannot hold
     * its slot for longer.
     */
    private byte[] readHello(Socket s, DataInputStream in, long since) throws IOException {
        byte[] hello = new byte[RendezvousWire.MAGIC.length + RendezvousWire.TOKEN_BYTES + Integer.BYTES];
        long deadline = since + TimeUnit.MILLISECONDS.toNanos(limits.helloTimeoutMillis());
        int off = 0;
        while (off < hello.length) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                throw new SocketTimeoutException("no whole hello within " + limits.helloTimeoutMillis() + " ms");
            }
            s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
            int n = in.read(hello, off, hello.length - off);
            if (n < 0) {
                throw new java.io.EOFException("closed before its hello was complete");
            }
            off += n;
        }
        return hello;
    }

    private void serve(Pending p) {
        Socket s = p.socket();
        Member member = null;
        boolean admitted = false;
        DataInputStream in;
        try {
            s.setTcpNoDelay(true);
            in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            ByteBuffer hello = ByteBuffer.wrap(readHello(s, in, p.since()));
            // Out of the waiting set before anything is decided: a connection evicted from now on would be
            // an admitted worker cut off during its acknowledgement, which fails the cluster.
            synchronized (pending) {
                if (!pending.remove(p)) {
                    closeQuietly(s); // evicted just as its hello came in: its worker tries again
                    return;
                }
            }
            byte[] magic = new byte[RendezvousWire.MAGIC.length];
            byte[] presented = new byte[RendezvousWire.TOKEN_BYTES];
            hello.get(magic).get(presented);
            int rank = hello.getInt();
            if (!Arrays.equals(magic, RendezvousWire.MAGIC) || !MessageDigest.isEqual(presented, token)) {
                // Nothing is said to a peer without the token.
                refusals.refused(
                        "no token",
                        "refused a connection from {} without the launch's token",
                        s.getRemoteSocketAddress());
                closeQuietly(s);
                return;
            }
            member = new Member(rank, s, out, limits.writeTimeoutMillis());
            String refusal = admit(member);
            if (refusal != null) {
                member.send(RendezvousWire.ERROR, refusal);
                closeQuietly(s);
                return;
            }
            admitted = true;
            member.acknowledge(size);
            s.setSoTimeout(0);
        } catch (SocketTimeoutException e) {
            refusals.refused(
                    "no hello",
                    "{} sent no whole hello within {} ms",
                    s.getRemoteSocketAddress(),
                    limits.helloTimeoutMillis());
            closeQuietly(s);
            return;
        } catch (IOException e) {
            if (admitted) {
                // Its rank is taken: without leaving, the others would wait for it for ever.
                leave(member, "lost its connection before its acknowledgement (" + e.getMessage() + ")");
            } else {
                closeQuietly(s);
            }
            return;
        } finally {
            synchronized (pending) {
                pending.remove(p); // when the hello did not come (after it came, it is gone already)
            }
        }
        String why = "closed its connection";
        try {
            for (int round = 0; ; round++) {
                byte[] value = RendezvousWire.readValue(in, RendezvousWire.MAX_VALUE);
                String violation = contribute(member, round, value);
                if (violation != null) {
                    why = violation;
                    break;
                }
            }
        } catch (IOException e) {
            if (member.stalled()) {
                why = "did not take a round's values within " + limits.writeTimeoutMillis() + " ms";
            } else if (!(e instanceof java.io.EOFException)) {
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
        if (Arrays.stream(members).allMatch(Objects::nonNull)) {
            // Every rank is in: nobody else may join, so nobody else need reach the port.
            try {
                server.close();
            } catch (IOException ignored) {
                // the accept loop ends either way
            }
        }
        return null;
    }

    /**
     * Adds a worker's value to its round; sends the round to every worker once it is complete.
     *
     * @return null, or why the worker broke the protocol (a value for a round after the current one)
     */
    private String contribute(Member m, int round, byte[] value) {
        byte[][] complete = null;
        Member[] to = null;
        synchronized (this) {
            if (failure != null || closed) {
                return null; // this rank was told already
            }
            if (round != roundsCompleted) {
                // Collectives are in lock step: a worker learns round r's values before it can give round
                // r + 1's. One that runs ahead would make the launcher keep every round it sends.
                return "sent a value for round " + round + " while round " + roundsCompleted
                        + " was not complete (collectives are in lock step)";
            }
            byte[][] values = rounds.get(round);
            if (values == null) {
                values = new byte[size][];
                rounds.put(round, values);
                if (size > 1) {
                    int r = round;
                    waitReport = Timers.TIMER.schedule(
                            () -> reportWaiting(r, limits.waitReportMillis(), limits.waitReportMillis()),
                            limits.waitReportMillis(),
                            TimeUnit.MILLISECONDS);
                    if (limits.roundTimeoutMillis() > 0) {
                        roundTimeout = Timers.TIMER.schedule(
                                () -> roundTimedOut(r), limits.roundTimeoutMillis(), TimeUnit.MILLISECONDS);
                    }
                }
            }
            values[m.rank] = value;
            int n = roundCounts.merge(round, 1, Integer::sum);
            if (n == size) {
                complete = values;
                rounds.remove(round);
                cancelWaitReport();
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
        return null;
    }

    /**
     * Says which ranks round {@code round} still waits for, if it still does after {@code waitedMillis},
     * and looks again after twice {@code intervalMillis} (the time since the last look), at most 10 minutes:
     * a worker stuck before its collective stalls all the others, and this names it.
     */
    private void reportWaiting(int round, long waitedMillis, long intervalMillis) {
        String line;
        synchronized (this) {
            byte[][] values = rounds.get(round);
            if (closed || failure != null || values == null) {
                return; // completed, or the cluster ended
            }
            line = "rendezvous " + address() + ": collective round " + round + " has waited " + millisText(waitedMillis)
                    + " for " + missingRanks(values);
        }
        warn.accept(line);
        long next = Math.min(intervalMillis * 2, TimeUnit.MINUTES.toMillis(10));
        synchronized (this) {
            if (rounds.containsKey(round) && failure == null && !closed) {
                waitReport = Timers.TIMER.schedule(
                        () -> reportWaiting(round, waitedMillis + next, next), next, TimeUnit.MILLISECONDS);
            }
        }
    }

    /** "rank(s) 2, 5 (6 of 8 have given their values)": the ranks a round's {@code values} still lack. */
    private String missingRanks(byte[][] values) {
        StringBuilder missing = new StringBuilder();
        int named = 0;
        int count = 0;
        for (int r = 0; r < size; r++) {
            if (values[r] == null) {
                count++;
                if (named < WAIT_REPORT_RANKS) {
                    missing.append(named++ == 0 ? "" : ", ").append(r);
                }
            }
        }
        if (count > named) {
            missing.append(" and ").append(count - named).append(" more");
        }
        return "rank(s) " + missing + " (" + (size - count) + " of " + size + " have given their values)";
    }

    private static String millisText(long millis) {
        return millis < 10_000 ? millis + " ms" : Duration.ofMillis(millis).toSeconds() + " s";
    }

    /**
     * The round timeout passed with round {@code round} still open: the cluster fails, and every worker's
     * collective fails naming the ranks that never gave their values (the round cannot complete without
     * them, and the workers that gave theirs cannot take them back).
     */
    private void roundTimedOut(int round) {
        Member[] all;
        String message;
        int completed;
        synchronized (this) {
            byte[][] values = rounds.get(round);
            if (closed || failure != null || values == null) {
                return; // completed, or the cluster ended
            }
            message = "collective round " + round + " was not complete within the collective timeout ("
                    + millisText(limits.roundTimeoutMillis()) + "): it still waited for " + missingRanks(values)
                    + "; the cluster can no longer run collectives";
            failure = message;
            rounds.clear();
            cancelWaitReport();
            roundCounts.clear();
            all = members.clone();
            completed = roundsCompleted;
        }
        warn.accept("rendezvous " + address() + ": " + message);
        for (Member m : all) {
            if (m != null) {
                m.failAfter(message, completed);
            }
        }
    }

    /** With this server's lock: the current round's report and timeout are not needed any more. */
    private void cancelWaitReport() {
        if (waitReport != null) {
            waitReport.cancel(false);
            waitReport = null;
        }
        if (roundTimeout != null) {
            roundTimeout.cancel(false);
            roundTimeout = null;
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
            rounds.clear(); // no round completes any more
            cancelWaitReport();
            roundCounts.clear();
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

    /**
     * One joined worker: its connection, written under its own lock (package-private for its test). Every
     * write has a deadline: a worker that does not take what is written within it has its connection
     * closed, and its reader then reports it stalled.
     */
    static final class Member {
        final int rank;
        final Socket socket;
        final DataOutputStream out;
        private final int writeTimeoutMillis;
        /** Set when a write outlasted its deadline and the connection was closed for it. */
        private volatile boolean stalled;

        Member(int rank, Socket socket, DataOutputStream out, int writeTimeoutMillis) {
            this.rank = rank;
            this.socket = socket;
            this.out = out;
            this.writeTimeoutMillis = writeTimeoutMillis;
        }

        boolean stalled() {
            return stalled;
        }

        /** What a write does; it may block while the worker does not read. */
        private interface Write {
            void to(DataOutputStream out) throws IOException;
        }

        /**
         * Writes and flushes with a deadline: past it the connection is closed, which ends a write blocked
         * on a worker that does not read (it then fails with an IOException).
         */
        private void writeWithin(Write write) throws IOException {
            ScheduledFuture<?> cut = Timers.TIMER.schedule(
                    () -> {
                        stalled = true;
                        closeQuietly();
                    },
                    writeTimeoutMillis,
                    TimeUnit.MILLISECONDS);
            try {
                write.to(out);
                out.flush();
            } finally {
                cut.cancel(false);
            }
        }

        /** The join's acknowledgement: OK and the cluster's size. */
        synchronized void acknowledge(int size) throws IOException {
            writeWithin(o -> {
                o.writeInt(RendezvousWire.OK);
                o.writeInt(size);
            });
        }

        synchronized void send(int status, String message) {
            try {
                writeWithin(o -> {
                    o.writeInt(status);
                    o.writeUTF(message);
                });
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
                writeWithin(o -> {
                    o.writeInt(RendezvousWire.OK);
                    o.writeInt(values.length);
                    for (byte[] v : values) {
                        o.writeInt(v.length);
                        o.write(v);
                    }
                });
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

    /**
     * The one timer thread of every rendezvous in the process: it cuts off writes past their deadline and
     * reports rounds that wait long. Started on first use. Not {@code CommTimers}: its tasks, timed by the
     * JDK's shared delayer, stay queued until their time even when cancelled, and a deadline per write (a
     * round's values to every worker) would pile up by the hundred thousand over 30 s of fast collectives;
     * here a cancelled deadline leaves the queue at once.
     */
    private static final class Timers {
        static final ScheduledThreadPoolExecutor TIMER = timer();

        private static ScheduledThreadPoolExecutor timer() {
            ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> Thread.ofPlatform()
                    .daemon(true)
                    .name("ucx4j-rendezvous-timer")
                    .unstarted(r));
            t.setRemoveOnCancelPolicy(true); // a write that ended leaves nothing queued
            return t;
        }
    }
}
