package org.ucx4j.cluster;

import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommAuthenticationException;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;
import org.ucx4j.comm.Comms;
import org.ucx4j.comm.Message;

/**
 * One comm between this worker and every other worker of a {@link Cluster}: the all-to-all connections of
 * Dask-CUDA's explicit comms. Each pair has one comm, opened by the higher rank to the lower one's
 * listener, and used in both directions.
 *
 * <p>Who may join: the mesh's comms authenticate in their handshake with a secret derived from the launch's
 * token (an HMAC of it), unless the options configure one ({@code auth.secret}, which then applies, and must
 * be the same on every worker). So a process without the token gets no comm: it is refused in the handshake,
 * and on {@code ucx://} its worker address never reaches UCX (docs/WIRE.md, "Threat model"). Then the first
 * message on each new comm carries the connecting worker's rank and a proof of the token (another HMAC under
 * it: the token itself never travels); the accepting side checks the proof (in constant time) and that the
 * rank is one it expects, and aborts any other comm.
 *
 * <p>Threading: safe from any thread once built. Ownership: the caller closes it, which closes every comm
 * and the listener.
 */
public final class ClusterMesh implements AutoCloseable {
    /** A hello: the rank, and the token's proof (an HMAC-SHA256 under it). */
    private static final int HELLO_BYTES = Integer.BYTES + 32;

    private final int rank;
    private final CommListener listener;
    private final Map<Integer, Comm> comms;

    private ClusterMesh(int rank, CommListener listener, Map<Integer, Comm> comms) {
        this.rank = rank;
        this.listener = listener;
        this.comms = Map.copyOf(comms);
    }

    static ClusterMesh connect(Cluster cluster, URI listenAddress, CommOptions configured, Duration timeout) {
        int me = cluster.rank();
        byte[] token = cluster.token();
        CommOptions options = configured.secret().isPresent() ? configured : configured.withSecret(meshSecret(token));
        Map<Integer, Comm> accepted = new ConcurrentHashMap<>();
        // Set once connecting gave up: a comm accepted after that is aborted, not left open.
        AtomicBoolean abandoned = new AtomicBoolean();
        CompletableFuture<Void> allAccepted = new CompletableFuture<>();
        int expectedAccepts = cluster.size() - 1 - me; // the higher ranks connect to us
        if (expectedAccepts == 0) {
            allAccepted.complete(null);
        }
        CommListener listener = Comms.listen(
                listenAddress,
                comm -> {
                    int peer;
                    try (Message hello = comm.read(timeout)) {
                        peer = checkHello(hello, token, me, cluster.size());
                    } catch (RuntimeException e) {
                        comm.abort();
                        throw e;
                    }
                    if (accepted.putIfAbsent(peer, comm) != null) {
                        comm.abort();
                        throw new IllegalStateException("rank " + peer + " connected twice");
                    }
                    if (abandoned.get()) {
                        accepted.remove(peer, comm);
                        comm.abort();
                        return;
                    }
                    if (accepted.size() == expectedAccepts) {
                        allAccepted.complete(null);
                    }
                },
                options);
        List<Comm> opened = new ArrayList<>();
        try {
            List<URI> addresses = cluster.exchange(listener.address());
            Map<Integer, Comm> comms = new ConcurrentHashMap<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            for (int peer = 0; peer < me; peer++) {
                Comm c = connectRetrying(addresses.get(peer), options, deadline);
                opened.add(c);
                c.write(Message.ofBytes(hello(me, token)));
                comms.put(peer, c);
            }
            allAccepted.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            comms.putAll(accepted);
            return new ClusterMesh(me, listener, comms);
        } catch (TimeoutException e) {
            abandoned.set(true);
            closeAll(opened, accepted, listener);
            throw new IllegalStateException("rank " + me + ": only " + accepted.size() + " of " + expectedAccepts
                    + " higher ranks connected within " + timeout.toSeconds() + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            abandoned.set(true);
            closeAll(opened, accepted, listener);
            throw new IllegalStateException("interrupted while connecting the mesh", e);
        } catch (ExecutionException | RuntimeException e) {
            abandoned.set(true);
            closeAll(opened, accepted, listener);
            throw e instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        }
    }

    /**
     * Connects to a peer's mesh listener, trying again (backoff 20-500 ms, until {@code deadline}) while
     * the connection fails for any reason but a refused secret or protocol: a listener whose handshake
     * slots are all taken closes a newcomer at once (docs/WIRE.md), and one refusal must not fail the mesh.
     */
    static Comm connectRetrying(URI address, CommOptions options, long deadline) {
        Backoff backoff = new Backoff(deadline);
        while (true) {
            try {
                return Comms.connect(address, options);
            } catch (CommAuthenticationException | CommProtocolException e) {
                throw e;
            } catch (CommException e) {
                try {
                    if (!backoff.pause()) {
                        throw e;
                    }
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /**
     * The mesh's handshake secret: HMAC-SHA256 of a fixed label under the launch's token, so that the token
     * itself never keys anything but the rendezvous and the hello.
     */
    static byte[] meshSecret(byte[] token) {
        return hmac(token, "ucx4j cluster mesh v1");
    }

    /**
     * The proof of the token in rank {@code rank}'s hello: the token itself would travel in clear on every
     * comm. It is the same on every comm of that rank in a launch, so whoever sees one (on a {@code tcp://}
     * mesh, which is not encrypted) and can pass the comm's handshake could replay it for that rank: with the
     * derived secret that takes the token anyway; with a configured {@code auth.secret}, an eavesdropper
     * who holds that secret (docs/WIRE.md leaves eavesdroppers out of its threat model).
     */
    static byte[] helloProof(byte[] token, int rank) {
        return hmac(token, "ucx4j cluster mesh hello v1, rank " + rank);
    }

    private static byte[] hmac(byte[] key, String label) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(label.getBytes(StandardCharsets.US_ASCII));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }

    static byte[] hello(int rank, byte[] token) {
        return ByteBuffer.allocate(HELLO_BYTES)
                .putInt(rank)
                .put(helloProof(token, rank))
                .array();
    }

    private static int checkHello(Message hello, byte[] token, int me, int size) {
        if (hello.frameCount() != 1 || hello.frame(0).size() != HELLO_BYTES) {
            throw new IllegalStateException("a mesh peer's first message is not a hello");
        }
        ByteBuffer b = ByteBuffer.wrap(hello.frame(0).toByteArray());
        int peer = b.getInt();
        byte[] presented = new byte[HELLO_BYTES - Integer.BYTES];
        b.get(presented);
        if (peer <= me || peer >= size) {
            throw new IllegalStateException(
                    "a mesh peer claims rank " + peer + " (expected " + (me + 1) + ".." + (size - 1) + ")");
        }
        if (!MessageDigest.isEqual(presented, helloProof(token, peer))) {
            throw new IllegalStateException("a mesh peer without the launch's token");
        }
        return peer;
    }

    private static void closeAll(List<Comm> opened, Map<Integer, Comm> accepted, CommListener listener) {
        opened.forEach(Comm::abort);
        accepted.values().forEach(Comm::abort);
        listener.close();
    }

    /**
     * Where this worker's mesh listener accepts the higher ranks' comms.
     *
     * @return the listener's address
     */
    public URI address() {
        return listener.address();
    }

    /**
     * The ranks of the other workers.
     *
     * @return ascending, without this worker's rank
     */
    public List<Integer> peers() {
        return comms.keySet().stream().sorted().toList();
    }

    /**
     * The comm to one peer.
     *
     * @param peer its rank
     * @return the comm, in both directions
     * @throws IllegalArgumentException for this worker's own rank or a rank outside the cluster
     */
    public Comm comm(int peer) {
        Comm c = comms.get(peer);
        if (c == null) {
            throw new IllegalArgumentException(
                    "no comm to rank " + peer + " (this is rank " + rank + "; peers " + peers() + ")");
        }
        return c;
    }

    /** Closes every comm (gracefully: what was written is delivered) and the listener. Idempotent. */
    @Override
    public void close() {
        RuntimeException first = null;
        for (Comm c : comms.values()) {
            try {
                c.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        listener.close();
        if (first != null) {
            throw first;
        }
    }
}
