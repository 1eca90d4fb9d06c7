package org.ucx4j.cli;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerAddress;

/**
 * How the two sides of {@code ucx4j bench} meet: over a plain TCP socket that the JVM owns, each side
 * sends its UCX worker address, then each connects a UCX endpoint to the other's address (UCX pairs the
 * two endpoints, as {@code ucx_perftest} does). UCX's own listener, its socket connection manager, never
 * faces whoever connects to the port: on UCX 1.13, 16 bytes of garbage sent to it abort the process.
 *
 * <p>What a stranger can do to a server: a connection that sends anything but this exchange, too much,
 * or nothing for {@link #HELLO_TIMEOUT}, is closed and the server waits on for its client; connections
 * are read side by side, so silent ones do not hold the client back (up to {@link #MAX_PENDING} of
 * them; beyond, new connections are closed at once, and the client may have to try again). A peer that speaks the exchange is trusted with
 * its worker address, as the comm is without a secret (docs/WIRE.md): the benchmark is a tool for
 * machines one controls, not a service.
 *
 * <p>Record: 8 bytes {@code UCX4JBW1}, a 4-byte big-endian length (1 to {@link #MAX_ADDRESS_BYTES}), the
 * worker address.
 *
 * <p>Threading: {@link #accept} reads connections on virtual threads of its own and returns on the
 * calling thread; the client's side runs on the calling thread.
 */
final class BenchRendezvous implements AutoCloseable {
    /** How long one connection may take to send its record before it is closed. */
    static final Duration HELLO_TIMEOUT = Duration.ofSeconds(10);
    /** The largest worker address accepted (UCX's are a few hundred bytes to a few KiB). */
    static final int MAX_ADDRESS_BYTES = 64 * 1024;

    private static final byte[] MAGIC = "UCX4JBW1".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** Refused connections reported one by one; a flood of them is not copied to the log. */
    static final int LOGGED_REFUSALS = 10;

    /** Connections read at the same time while waiting for the client. */
    static final int MAX_PENDING = 16;

    private final ServerSocket server;
    private final PrintStream log;
    private final AtomicInteger refused = new AtomicInteger();

    private BenchRendezvous(ServerSocket server, PrintStream log) {
        this.server = server;
        this.log = log;
    }

    /**
     * Listens on {@code port} of every local address.
     *
     * @param port the port, 0 for any
     * @param log where refused connections are reported (one line each)
     * @return the listening side; close it once the client is connected
     * @throws IOException when the port cannot be bound
     */
    static BenchRendezvous listen(int port, PrintStream log) throws IOException {
        ServerSocket s = new ServerSocket();
        try {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(port));
        } catch (IOException e) {
            s.close();
            throw e;
        }
        return new BenchRendezvous(s, log);
    }

    /** The port listened on. */
    int port() {
        return server.getLocalPort();
    }

    /**
     * Waits for the client: reads each connection on a virtual thread of its own (at most {@link
     * #MAX_PENDING} at a time; more are closed at once), and the first that sends a valid record gets
     * this worker's address in answer and an endpoint to its own. A stranger's silent connections
     * therefore cannot keep the client waiting past its own deadline.
     *
     * @param worker this side's worker
     * @return the endpoint to the client
     * @throws IOException when listening itself fails
     */
    UcxEndpoint accept(UcxWorker worker) throws IOException {
        byte[] own = worker.address().bytes();
        CompletableFuture<byte[]> client = new CompletableFuture<>();
        AtomicBoolean claimed = new AtomicBoolean();
        Semaphore pending = new Semaphore(MAX_PENDING);
        Thread acceptor = Thread.ofVirtual().name("ucx4j-bench-accept").start(() -> {
            while (!client.isDone()) {
                Socket s;
                try {
                    s = server.accept();
                } catch (IOException e) {
                    client.completeExceptionally(e);
                    return;
                }
                if (!pending.tryAcquire()) {
                    refused(s, "more than " + MAX_PENDING + " connections waiting to be read");
                    closeQuietly(s);
                    continue;
                }
                Thread.ofVirtual().name("ucx4j-bench-hello").start(() -> {
                    try (s) {
                        byte[] peer = withDeadline(s, () -> readRecord(new DataInputStream(s.getInputStream())));
                        if (!claimed.compareAndSet(false, true)) {
                            return; // another client was first: this one is closed unanswered
                        }
                        try {
                            withDeadline(s, () -> {
                                writeRecord(new DataOutputStream(s.getOutputStream()), own);
                                return null;
                            });
                        } catch (IOException gone) {
                            claimed.set(false); // it left before the answer: the next valid one may have it
                            throw gone;
                        }
                        client.complete(peer);
                    } catch (IOException | RuntimeException e) {
                        refused(s, e.getMessage() == null ? e.toString() : e.getMessage());
                    } finally {
                        pending.release();
                    }
                });
            }
        });
        byte[] peer;
        try {
            peer = client.join();
        } catch (java.util.concurrent.CompletionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } finally {
            server.close(); // ends the acceptor; later connections are refused by the system
            try {
                acceptor.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return worker.connect(WorkerAddress.of(peer));
    }

    private void refused(Socket s, String why) {
        int n = refused.incrementAndGet();
        if (n <= LOGGED_REFUSALS) {
            log.println("ucx4j bench: refused a connection from " + s.getRemoteSocketAddress() + ": " + why
                    + (n == LOGGED_REFUSALS ? " (further refusals are not reported)" : ""));
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // refusing it anyway
        }
    }

    /**
     * The client's side: connects to the server's socket, exchanges addresses, connects an endpoint to
     * the server's worker.
     *
     * @param worker this side's worker
     * @param host the server's host
     * @param port the server's port
     * @return the endpoint to the server
     * @throws IOException when the server cannot be reached or answers wrongly
     */
    static UcxEndpoint connect(UcxWorker worker, String host, int port) throws IOException {
        byte[] peer;
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), (int) HELLO_TIMEOUT.toMillis());
            peer = withDeadline(s, () -> {
                writeRecord(
                        new DataOutputStream(s.getOutputStream()),
                        worker.address().bytes());
                return readRecord(new DataInputStream(s.getInputStream()));
            });
        }
        return worker.connect(WorkerAddress.of(peer));
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    /** Work on a socket's streams; at the deadline the socket is closed, which ends a blocked read. */
    private interface SocketWork<T> {
        T run() throws IOException;
    }

    private static <T> T withDeadline(Socket s, SocketWork<T> work) throws IOException {
        s.setSoTimeout((int) HELLO_TIMEOUT.toMillis());
        // SO_TIMEOUT bounds each read; this bounds them all (a peer sending a byte at a time).
        CompletableFuture<Void> deadline = CompletableFuture.runAsync(
                () -> {
                    try {
                        s.close();
                    } catch (IOException ignored) {
                        // closing to end a read
                    }
                },
                CompletableFuture.delayedExecutor(HELLO_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        try {
            return work.run();
        } catch (SocketTimeoutException e) {
            throw new IOException("no address exchange within " + HELLO_TIMEOUT.toSeconds() + " s", e);
        } catch (IOException e) {
            if (deadline.isDone()) {
                throw new IOException("no address exchange within " + HELLO_TIMEOUT.toSeconds() + " s", e);
            }
            throw e;
        } finally {
            deadline.cancel(false);
        }
    }

    static void writeRecord(DataOutputStream out, byte[] address) throws IOException {
        out.write(MAGIC);
        out.writeInt(address.length);
        out.write(address);
        out.flush();
    }

    static byte[] readRecord(DataInputStream in) throws IOException {
        byte[] magic = new byte[MAGIC.length];
        try {
            in.readFully(magic);
            if (!Arrays.equals(magic, MAGIC)) {
                throw new IOException("not a ucx4j bench peer (its first bytes are not "
                        + new String(MAGIC, java.nio.charset.StandardCharsets.US_ASCII) + ")");
            }
            int length = in.readInt();
            if (length < 1 || length > MAX_ADDRESS_BYTES) {
                throw new IOException(
                        "a worker address of " + length + " bytes (expected 1 to " + MAX_ADDRESS_BYTES + ")");
            }
            byte[] address = new byte[length];
            in.readFully(address);
            return address;
        } catch (EOFException e) {
            throw new IOException("the peer hung up before sending its worker address", e);
        }
    }
}
