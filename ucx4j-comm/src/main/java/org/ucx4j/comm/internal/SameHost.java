package org.ucx4j.comm.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.ucx4j.Ucx;
import org.ucx4j.UcxKeys;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;

/**
 * Same-host peers of {@code ucx://} comms: whether two processes can reach each other through UCX's
 * shared memory transports, and the token each side shows the other in the handshake. Only a socket
 * connection that never left the host ({@link #local}) takes part: a remote peer cannot claim to be one.
 *
 * <p>Why a worker per peer process. UCX's shared memory transport ({@code mm}: {@code posix},
 * {@code sysv}) has every sender reserve a slot of the <em>receiver's</em> FIFO and publish it after the
 * copy; a sender killed in between leaves a slot the receiver waits on for good, and every later shared
 * memory message to that worker, from anyone, waits behind it (docs/CONFIGURATION.md). A worker that
 * receives from one peer process only takes that risk for that peer alone: when it dies, its comms fail
 * (the handshake socket ends), and the worker closes a short while after the last of them. So two processes of one host that both
 * want it each open a worker kept for the other ({@link UcxRuntimes#acquireSameHost}), and their comms
 * run over shared memory with peer failure still detected.
 *
 * <p>The token: {@code <host>|<process>}. The host part says which processes can open each other's shared
 * memory: the kernel's boot id, the IPC and PID namespaces (System V segments, and POSIX segments opened
 * through {@code /proc/<pid>/fd}) and the user id (the segments' owner); and that they agree on how to use
 * it: the UCX version and the shared memory transport's segment size, FIFO length and FIFO element size
 * ({@link #hostPart}). The process part is a random id of
 * the {@link UcxRuntimes} (one per comm context): it keys the peer's worker. Tokens hold nothing secret:
 * a listener shows its token to any local client in its PROOF (under its MAC when there is a secret),
 * a client shows its own only to a listener that proved the secret.
 *
 * <p>Threading: immutable; the host part is read once.
 */
final class SameHost {
    /**
     * UCX's transports a same-host worker keeps besides its one shared memory transport: the GPU's (which
     * reach the same host only) and {@code cma} (which UCX leaves unused while it cannot invalidate a dead
     * peer's access: docs/CONFIGURATION.md).
     */
    static final Set<String> TRANSPORTS =
            Set.of("cma", "cuda_copy", "cuda_ipc", "gdr_copy", "rocm_copy", "rocm_ipc", "rocm_gdr");

    /**
     * The shared memory transports that carry messages between two processes' host memory and can report a
     * dead peer, in the order a same-host worker picks one: {@code sysv} first, whose segments do not count
     * against {@code /dev/shm} (a container's is often 64 MiB), then {@code posix}. One only: each costs
     * its FIFO and receive segments (measured with {@link #SEGMENT_SIZE}: a JVM of a same-host pair maps
     * up to 20.8 MiB of System V memory on UCX 1.22 and 1.13).
     */
    static final List<String> SHARED_MEMORY = List.of("sysv", "posix");

    /**
     * The size of a receive segment of a same-host worker's shared memory transport: 32 KiB of payload
     * and the 64 bytes UCX's default (8,256) also adds. Measured on H200 machines' idle cores
     * (docs/BENCHMARKS.md "Same-host segments"): {@code ucx://} 1 MiB messages 1.09x and 64 MiB 1.05x the
     * default's (three rounds alternating, one call), 1.2-1.8x at 1 MiB in a two-round sweep on another
     * machine. Not 64 KiB or more: UCX's FIFO element keeps a segment's length in 16 bits
     * ({@code uct_mm_fifo_element_t.length}), and larger segments corrupt messages without an error.
     */
    static final int SEGMENT_SIZE = 32 * 1024 + 64;

    /**
     * The receive FIFO's length of a same-host worker (UCX 1.22's default; 1.13's is 64). Set, not left to
     * UCX: a sender writes into the receiver's FIFO by its own idea of the FIFO's length and of the
     * segment size, so both sides must agree ({@link #hostPart}).
     */
    static final int FIFO_SIZE = 256;

    /**
     * The size of a FIFO element (UCX's default): a sender finds the receiver's elements, and writes small
     * messages inline into them, by its own idea of it, so both sides must agree on it too.
     */
    static final int FIFO_ELEMENT_SIZE = 128;

    /**
     * Receive segments in the first chunk UCX allocates: the FIFO's own ({@link #FIFO_SIZE} + 1) and a few
     * for UCX to keep (264 x 32,832 bytes, where UCX's default chunk of 512 would take twice that). Later
     * chunks, when UCX keeps more, grow by UCX's own factor (1.22: {@code RX_GROW_FACTOR} 2).
     */
    static final int RX_BUFS_GROW = FIFO_SIZE + 8;

    private static final Optional<String> HOST = readHost();

    private SameHost() {}

    /** The host part of this process's token; empty where it cannot be told (not Linux, no /proc). */
    static Optional<String> host() {
        return HOST;
    }

    private static Optional<String> readHost() {
        try {
            String boot =
                    Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
            String ipc = Files.readSymbolicLink(Path.of("/proc/self/ns/ipc")).toString();
            String pid = Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
            Object uid = Files.getAttribute(Path.of("/proc/self"), "unix:uid");
            String host = boot + " " + ipc + " " + pid + " uid " + uid;
            return host.indexOf('|') >= 0 || host.length() > 256 ? Optional.empty() : Optional.of(host);
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * Whether a comm with these options may use same-host workers: {@code same-host-shared-memory} and
     * {@code peer-error-handling} on (without peer error handling the shared worker already uses shared
     * memory, and nothing detects a dead peer's FIFO either way).
     */
    static boolean wanted(CommOptions options) {
        return options.config().get(CommKeys.SAME_HOST_SHARED_MEMORY)
                && options.config().get(UcxKeys.PEER_ERROR_HANDLING)
                && HOST.isPresent();
    }

    /**
     * Whether a socket connection stayed on this host: the peer's address is a loopback address or this
     * side's own address of the connection (the kernel delivers it over the loopback interface).
     */
    static boolean local(java.net.SocketAddress remote, java.net.SocketAddress local) {
        return remote instanceof java.net.InetSocketAddress r
                && local instanceof java.net.InetSocketAddress l
                && r.getAddress() != null
                && (r.getAddress().isLoopbackAddress() || r.getAddress().equals(l.getAddress()));
    }

    /**
     * The host part of this process's token as shown in handshakes: {@link #host()}, then the UCX version
     * (major.minor) and the shared memory transport's segment size, FIFO length and FIFO element size. Two processes pair on
     * same-host workers only when all of it is equal: UCX's {@code mm} transport writes into the peer's
     * FIFO by its own configuration, so a peer with another FIFO length or segment size (another ucx4j
     * version, another UCX) would corrupt messages. Read on first use, from handshakes of {@code ucx://}
     * comms, whose runtime has loaded UCX already.
     *
     * @return the host part; empty where {@link #host()} is, or UCX is not loaded
     */
    static Optional<String> hostPart() {
        String part = hostPart;
        if (part == null && HOST.isPresent() && Ucx.isAvailable()) {
            String[] version = Ucx.version().split("\\.");
            part = HOST.get() + " ucx " + version[0] + "." + (version.length > 1 ? version[1] : "0") + " mm "
                    + SEGMENT_SIZE + "/" + FIFO_SIZE + "/" + FIFO_ELEMENT_SIZE;
            hostPart = part;
        }
        return Optional.ofNullable(part);
    }

    /** {@link #hostPart()} once read; null before. */
    private static volatile String hostPart;

    /** This process's token for a comm context's process id. */
    static byte[] token(String process) {
        return (hostPart().orElseThrow() + "|" + process).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The peer's process id when its token names this host (the same boot, namespaces and user) and a
     * process other than {@code ownProcess}; empty otherwise.
     */
    static Optional<String> peerProcess(byte[] token, String ownProcess) {
        Optional<String> own = hostPart();
        if (token.length == 0 || own.isEmpty()) {
            return Optional.empty();
        }
        String t = new String(token, StandardCharsets.UTF_8);
        int bar = t.lastIndexOf('|');
        if (bar < 0 || !t.substring(0, bar).equals(own.get())) {
            return Optional.empty();
        }
        String process = t.substring(bar + 1);
        if (process.isEmpty() || process.equals(ownProcess) || !process.matches("[0-9a-f]{1,64}")) {
            return Optional.empty();
        }
        return Optional.of(process);
    }
}
