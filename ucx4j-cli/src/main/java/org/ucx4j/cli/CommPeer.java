package org.ucx4j.cli;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;

/**
 * A {@link CommBenchServer} and a comm to it: for {@code ucx://} and {@code tcp://} a child JVM
 * ({@code bench --comm X --server}, started by {@link PeerLauncher}) reached over loopback, for
 * {@code inproc://} a listener in this JVM. Closing says bye, closes the comm and waits for the server.
 *
 * <p>Ownership: the caller closes it. Threading: one thread at a time.
 */
final class CommPeer implements AutoCloseable {
    private static final AtomicLong NAMES = new AtomicLong();

    private final CommKind kind;
    private final PeerLauncher child;
    private final CommListener listener;
    private final Comm comm;
    private boolean broken;

    private CommPeer(CommKind kind, PeerLauncher child, CommListener listener, Comm comm) {
        this.kind = kind;
        this.child = child;
        this.listener = listener;
        this.comm = comm;
    }

    /**
     * Starts the server and connects to it.
     *
     * @param kind the transport
     * @param options the comm options (the child JVM loads the same configuration)
     * @return the connected peer
     */
    static CommPeer start(CommKind kind, CommOptions options) {
        if (!kind.twoProcesses()) {
            URI name =
                    URI.create("inproc://ucx4j-bench-" + ProcessHandle.current().pid() + "-" + NAMES.incrementAndGet());
            CommListener listener = Comms.listen(
                    name,
                    c -> {
                        try (c) {
                            CommBenchServer.serve(c);
                        }
                    },
                    options);
            try {
                return new CommPeer(kind, null, listener, Comms.connect(listener.address(), options));
            } catch (RuntimeException e) {
                listener.close();
                throw e;
            }
        }
        PeerLauncher child =
                PeerLauncher.start(List.of("--comm", kind.scheme(), "--server", "--port", "0", "--exit-with-parent"));
        try {
            int port = child.awaitPort(Duration.ofSeconds(60));
            return new CommPeer(kind, child, null, Comms.connect(address(kind, "127.0.0.1", port), options));
        } catch (RuntimeException e) {
            child.close();
            throw e;
        }
    }

    /**
     * Connects to a server started elsewhere with {@code bench --comm X --server}.
     *
     * @param kind the transport
     * @param host the server's host
     * @param port its port
     * @param options the comm options
     * @return the connected peer
     */
    static CommPeer connect(CommKind kind, String host, int port, CommOptions options) {
        return new CommPeer(kind, null, null, Comms.connect(address(kind, host, port), options));
    }

    private static URI address(CommKind kind, String host, int port) {
        String h = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
        return URI.create(kind.scheme() + "://" + h + ":" + port);
    }

    /**
     * Runs one measurement on this peer.
     *
     * @param run what to measure
     * @param bar counts each round trip or message written
     * @return the result
     */
    CommBenchResult run(CommBenchSettings run, ProgressBar bar) {
        try {
            return CommBenchClient.run(comm, kind, run, bar);
        } catch (RuntimeException | Error e) {
            broken = true; // the server may be anywhere in the run: no bye, no waiting for it
            throw e;
        }
    }

    /**
     * Runs short unmeasured runs of {@code shape}'s shape ({@link CommBenchSettings#forWarmUp}) for about
     * {@code nanos} ({@link BenchSettings#warmUp}): the JIT compiles the paths before they are measured
     * (see {@link BenchSettings#DEFAULT_WARMUP_SECONDS}).
     *
     * @param shape the run to warm up for
     * @param nanos how long
     * @param announce whether to say so on stderr
     */
    void warmUp(CommBenchSettings shape, long nanos, boolean announce) {
        CommBenchSettings small = shape.forWarmUp();
        BenchSettings.warmUp(nanos, announce, () -> {
            try (ProgressBar silent = ProgressBar.start(small.total(), "warm-up", false)) {
                run(small, silent);
            }
        });
    }

    /**
     * The transports beneath the comm that carry messages of frames of {@code frameSize} bytes
     * ({@link Comm#carriedBy}).
     *
     * @param frameSize the frame size
     * @return transport names; empty when the comm cannot say
     */
    List<String> carriedBy(long frameSize) {
        return comm.carriedBy(frameSize);
    }

    @Override
    public void close() {
        try {
            if (broken) {
                comm.abort();
            } else if (!comm.isClosed()) {
                CommBenchClient.sayBye(comm);
            }
        } finally {
            comm.close();
            if (listener != null) {
                listener.close();
            }
            if (child != null && broken) {
                child.close();
            } else if (child != null) {
                int code = child.awaitExit(Duration.ofSeconds(15));
                if (code != 0) {
                    System.err.println("warning: the " + kind.scheme() + ":// bench server exited with code " + code);
                }
                child.close();
            }
        }
    }
}
