package org.ucx4j.cli;

import java.io.PrintStream;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;
import org.ucx4j.comm.Message;

/**
 * The passive side of {@code ucx4j bench --comm} (see {@link CommBenchProtocol}): serves the runs one
 * client asks for on one comm until it says bye. {@link #serveOne} is the child JVM's main loop; the
 * inproc benchmark calls {@link #serve} from its listener's handler.
 *
 * <p>Threading: everything on the calling thread, with the comm's blocking reads and writes.
 */
final class CommBenchServer {
    private CommBenchServer() {}

    /**
     * Listens, prints {@code PORT <n>} on {@code out}, serves the first client on its comm, rejects any
     * other, and returns when that client said bye.
     *
     * @param kind the transport
     * @param port the port, 0 for any
     * @param options the comm options
     * @param out where the port goes
     */
    static void serveOne(CommKind kind, int port, CommOptions options, PrintStream out) {
        CompletableFuture<Comm> accepted = new CompletableFuture<>();
        URI address = URI.create(kind.scheme() + "://0.0.0.0:" + port);
        Comm comm;
        try (CommListener listener = Comms.listen(
                address,
                c -> {
                    if (!accepted.complete(c)) {
                        c.abort();
                    }
                },
                options)) {
            out.println("PORT " + listener.address().getPort());
            out.flush();
            comm = accepted.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the client", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        // Served here, on the calling platform thread rather than the handler's virtual thread: a virtual
        // thread's wake-up adds to every round trip.
        try (comm) {
            serve(comm);
        }
    }

    /**
     * Serves runs on a comm until the client's bye (the caller closes the comm).
     *
     * @param comm the client's comm
     */
    static void serve(Comm comm) {
        while (true) {
            CommBenchSettings run;
            try (Message control = comm.read()) {
                run = CommBenchProtocol.readControl(control);
            } catch (IllegalArgumentException e) {
                comm.write(CommBenchProtocol.reply(false, e.getMessage()));
                throw e;
            }
            if (run == null) {
                return;
            }
            comm.write(CommBenchProtocol.reply(true, null));
            if (run.mode() == BenchMode.LATENCY) {
                echo(comm, run);
            } else {
                if (run.warmup() > 0) {
                    receive(comm, run, run.warmup(), "warm-up");
                }
                receive(comm, run, run.iterations(), "measured");
            }
        }
    }

    /** Latency: writes every message back as it came, then frees it. */
    private static void echo(Comm comm, CommBenchSettings run) {
        for (long i = 0; i < run.total(); i++) {
            try (Message m = comm.read()) {
                CommBenchProtocol.checkShape(m, run, "ping " + i);
                comm.write(m);
            }
        }
    }

    /**
     * One bandwidth phase: reads {@code n} messages, replies (the client's clock stops there), then checks
     * the first and last message's bytes and replies with the verdict.
     */
    private static void receive(Comm comm, CommBenchSettings run, long n, String phase) {
        Message first = null;
        Message last = null;
        try {
            for (long k = 0; k < n; k++) {
                Message m = comm.read();
                CommBenchProtocol.checkShape(m, run, "message " + k + " of the " + phase + " phase");
                if (k == 0) {
                    first = m;
                } else if (k == n - 1) {
                    last = m;
                } else {
                    m.close();
                }
            }
            comm.write(CommBenchProtocol.reply(true, null));
            String verdict = null;
            try {
                CommBenchProtocol.verify(first, run, "first message of the " + phase + " phase");
                if (last != null) {
                    CommBenchProtocol.verify(last, run, "last message of the " + phase + " phase");
                }
            } catch (IllegalStateException e) {
                verdict = e.getMessage();
            }
            comm.write(CommBenchProtocol.reply(verdict == null, verdict));
        } finally {
            if (first != null) {
                first.close();
            }
            if (last != null) {
                last.close();
            }
        }
    }
}
