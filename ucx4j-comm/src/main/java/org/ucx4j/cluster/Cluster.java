package org.ucx4j.cluster;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;

/**
 * This process as one worker of a cluster started by {@code ucx4j launch}: its rank, the cluster's size,
 * its GPU, and collectives through the launcher's rendezvous, so that the workers learn each other's comm
 * addresses.
 *
 * <pre>{@code
 * try (Cluster cluster = Cluster.join();                                  // from the launcher's environment
 *      ClusterMesh mesh = cluster.mesh("ucx://127.0.0.1:0", CommOptions.defaults())) {
 *     for (int peer : mesh.peers()) {
 *         mesh.comm(peer).write(Message.ofBytes(("hello from " + cluster.rank()).getBytes()));
 *     }
 * }
 * }</pre>
 *
 * <p>The launcher passes, in the environment: {@link #ENV_RANK}, {@link #ENV_SIZE}, {@link #ENV_NAME},
 * {@link #ENV_GPU} (the GPU's UUID; absent for CPU-only workers), {@link #ENV_RENDEZVOUS} and
 * {@link #ENV_TOKEN} (a random secret of this launch, presented to the rendezvous and to the peers of a
 * {@link ClusterMesh}; never printed).
 *
 * <p>Collectives ({@link #allGather}, {@link #exchange}, {@link #barrier}) must be called by every
 * worker, in the same order; each blocks until every worker has called it (with {@code ucx4j launch
 * --collective-timeout}, at most that long after the first did: then it fails with an {@link
 * IllegalStateException} naming the ranks that never came). When a worker leaves (exits, dies, closes its
 * {@code Cluster}), the launcher fails every later collective of the others with an
 * {@link IllegalStateException} naming that rank.
 *
 * <p>Threading: safe from any thread; collectives run one at a time (a second caller waits).
 * Ownership: the caller closes it, which leaves the cluster (after that, the others' collectives fail).
 */
public final class Cluster implements AutoCloseable {
    /** The worker's rank, {@code 0..size-1}. */
    public static final String ENV_RANK = "UCX4J_CLUSTER_RANK";
    /** How many workers the launch started. */
    public static final String ENV_SIZE = "UCX4J_CLUSTER_SIZE";
    /** The worker's name in the launcher's output, {@code gpu1} or {@code w2}. */
    public static final String ENV_NAME = "UCX4J_CLUSTER_NAME";
    /** The UUID of the worker's GPU ({@code GPU-...} or {@code MIG-...}); absent for a CPU-only worker. */
    public static final String ENV_GPU = "UCX4J_CLUSTER_GPU";
    /** Where the launcher's rendezvous listens, {@code host:port}. */
    public static final String ENV_RENDEZVOUS = "UCX4J_CLUSTER_RENDEZVOUS";
    /** The launch's secret, 64 hex digits. */
    public static final String ENV_TOKEN = "UCX4J_CLUSTER_TOKEN";

    private final int rank;
    private final int size;
    private final String name;
    private final String gpu;
    private final byte[] token;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private boolean closed;

    private Cluster(int rank, int size, String name, String gpu, byte[] token, Socket socket) throws IOException {
        this.rank = rank;
        this.size = size;
        this.name = name;
        this.gpu = gpu;
        this.token = token;
        this.socket = socket;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    }

    /**
     * Whether this process was started by {@code ucx4j launch} (its environment names a rendezvous).
     *
     * @return true under the launcher
     */
    public static boolean isLaunched() {
        return System.getenv(ENV_RENDEZVOUS) != null;
    }

    /**
     * Joins the cluster described by this process's environment, waiting up to 30 s for the rendezvous.
     *
     * @return the membership, owned by the caller
     * @throws IllegalStateException when the process was not started by {@code ucx4j launch}, the
     *     environment is malformed, or the launcher refuses or cannot be reached (the message says which)
     */
    public static Cluster join() {
        return join(System.getenv(), Duration.ofSeconds(30));
    }

    /**
     * Joins the cluster described by {@code env}.
     *
     * @param env the variables ({@link #ENV_RANK} and the others)
     * @param timeout how long connecting and the launcher's answer may take; a connection that the launcher
     *     closes without an answer (it had no free slot, or the token is wrong) is tried again meanwhile
     * @return the membership, owned by the caller
     * @throws IllegalStateException as {@link #join()}
     */
    public static Cluster join(Map<String, String> env, Duration timeout) {
        String where = env.get(ENV_RENDEZVOUS);
        if (where == null) {
            throw new IllegalStateException("not started by ucx4j launch: " + ENV_RENDEZVOUS
                    + " is not set (run the program with ucx4j launch)");
        }
        byte[] token = RendezvousWire.decodeToken(env.get(ENV_TOKEN));
        int rank = intVariable(env, ENV_RANK);
        int expectedSize = intVariable(env, ENV_SIZE);
        int colon = where.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalStateException(ENV_RENDEZVOUS + "=" + where + " is not host:port");
        }
        String host = where.substring(0, colon).replace("[", "").replace("]", "");
        int port = intVariable(Map.of(ENV_RENDEZVOUS, where.substring(colon + 1)), ENV_RENDEZVOUS);
        // The launcher closes a connection it has no slot for (strangers may hold them for a while): such a
        // connection, closed before any answer, is tried again until the time is up. Nothing else is: a
        // launcher that cannot be reached, or that answers, is reported at once.
        long deadline = System.nanoTime() + timeout.toNanos();
        Backoff backoff = new Backoff(deadline);
        boolean closedWithoutAnswer = false;
        while (true) {
            Socket s = new Socket();
            boolean connected = false;
            try {
                s.setTcpNoDelay(true);
                int left = (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                s.connect(new InetSocketAddress(host, port), left);
                connected = true;
                s.setSoTimeout(left);
                Cluster c = new Cluster(
                        rank, expectedSize, env.getOrDefault(ENV_NAME, "w" + rank), env.get(ENV_GPU), token, s);
                c.out.write(RendezvousWire.MAGIC);
                c.out.write(token);
                c.out.writeInt(rank);
                c.out.flush();
                int status = c.in.readInt();
                if (status != RendezvousWire.OK) {
                    throw new IllegalStateException("the launcher refused rank " + rank + ": " + c.in.readUTF());
                }
                int size = c.in.readInt();
                if (size != expectedSize) {
                    throw new IllegalStateException("the launcher says the cluster has " + size + " workers, "
                            + ENV_SIZE + " says " + expectedSize);
                }
                s.setSoTimeout(0);
                return c;
            } catch (IOException e) {
                closeQuietly(s);
                boolean unanswered = connected && !(e instanceof SocketTimeoutException);
                closedWithoutAnswer |= unanswered;
                boolean again;
                try {
                    again = unanswered && backoff.pause();
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while joining the cluster as rank " + rank, ie);
                }
                if (!again) {
                    String hint = e instanceof ConnectException
                            ? " (nothing listens there: the launcher stopped, or every rank has joined already)"
                            : closedWithoutAnswer
                                    ? " (the launcher closed the connection without an answer: a wrong token, or no"
                                            + " free slot for a hello all that time)"
                                    : "";
                    throw new IllegalStateException(
                            "cannot join the cluster at " + where + " as rank " + rank + " within " + timeout.toMillis()
                                    + " ms: " + e + hint,
                            e);
                }
            } catch (RuntimeException e) {
                closeQuietly(s);
                throw e;
            }
        }
    }

    private static int intVariable(Map<String, String> env, String name) {
        String v = env.get(name);
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalStateException(name + "=" + v + " is not a number (set by ucx4j launch)");
        }
    }

    /**
     * This worker's rank.
     *
     * @return {@code 0..size()-1}
     */
    public int rank() {
        return rank;
    }

    /**
     * How many workers the launch started.
     *
     * @return at least 1
     */
    public int size() {
        return size;
    }

    /**
     * The worker's name in the launcher's output.
     *
     * @return {@code gpu1}, {@code w2}, ...
     */
    public String name() {
        return name;
    }

    /**
     * The UUID of this worker's GPU, which is also CUDA device 0 in this process (the first entry of its
     * {@code CUDA_VISIBLE_DEVICES}).
     *
     * @return {@code GPU-...} or {@code MIG-...}; empty for a CPU-only worker
     */
    public Optional<String> gpu() {
        return Optional.ofNullable(gpu);
    }

    /**
     * Every worker contributes a value; each receives all of them, indexed by rank.
     *
     * @param value this worker's value, at most 64 KiB
     * @return the values of ranks {@code 0..size-1}
     * @throws IllegalArgumentException when the value is too large
     * @throws IllegalStateException when a worker left or the launcher stopped (the message names which)
     */
    public synchronized List<byte[]> allGather(byte[] value) {
        if (value.length > RendezvousWire.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "a value of " + value.length + " bytes (at most " + RendezvousWire.MAX_VALUE + ")");
        }
        if (closed) {
            throw new IllegalStateException("this cluster membership is already closed");
        }
        try {
            out.writeInt(value.length);
            out.write(value);
            out.flush();
            int status = in.readInt();
            if (status != RendezvousWire.OK) {
                throw new IllegalStateException("cluster collective failed: " + in.readUTF());
            }
            int n = in.readInt();
            if (n != size) {
                throw new IllegalStateException("the launcher answered " + n + " values for " + size + " workers");
            }
            List<byte[]> values = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                values.add(RendezvousWire.readValue(in, RendezvousWire.MAX_VALUE));
            }
            return List.copyOf(values);
        } catch (IOException e) {
            throw new IllegalStateException("the cluster's rendezvous is gone (the launcher stopped?): " + e, e);
        }
    }

    /**
     * {@link #allGather(byte[])} of UTF-8 text.
     *
     * @param value this worker's text
     * @return the texts of ranks {@code 0..size-1}
     */
    public List<String> allGatherText(String value) {
        return allGather(value.getBytes(StandardCharsets.UTF_8)).stream()
                .map(b -> new String(b, StandardCharsets.UTF_8))
                .toList();
    }

    /**
     * Publishes this worker's comm address and learns everyone's.
     *
     * @param address where this worker listens, for example {@code listener.address()}
     * @return the addresses of ranks {@code 0..size-1} (this worker's own at {@link #rank()})
     * @throws IllegalStateException as {@link #allGather(byte[])}, or when a peer published something that
     *     is not a URI
     */
    public List<URI> exchange(URI address) {
        return allGatherText(address.toString()).stream().map(Comms::parse).toList();
    }

    /** Waits until every worker has called {@code barrier()}. */
    public void barrier() {
        allGather(new byte[0]);
    }

    /**
     * Connects this worker to every other: listens on {@code listenAddress}, exchanges addresses, and
     * returns one comm per peer (see {@link ClusterMesh}). A collective: every worker must call it.
     *
     * @param listenAddress where to listen, for example {@code ucx://127.0.0.1:0} or {@code tcp://0.0.0.0:0}
     * @param options the comms' options; without a configured {@code auth.secret}, the mesh's comms
     *     authenticate with a secret derived from the launch's token
     * @return the mesh, owned by the caller
     */
    public ClusterMesh mesh(String listenAddress, CommOptions options) {
        return ClusterMesh.connect(this, Comms.parse(listenAddress), options, Duration.ofSeconds(60));
    }

    byte[] token() {
        return token.clone();
    }

    /** Leaves the cluster: later collectives of the other workers fail. Idempotent. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            closeQuietly(socket);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // leaving anyway
        }
    }

    @Override
    public String toString() {
        return "Cluster[" + name + ", rank " + rank + " of " + size + (gpu != null ? ", " + gpu : "") + "]";
    }
}
