package org.ucx4j.jmh;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.CloseMode;
import org.ucx4j.ProgressMode;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxFuture;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerOptions;

/**
 * Two workers of one context in this process, the client connected to the server over loopback: the
 * fixture every benchmark of this module measures through. With peer error handling off UCX may carry
 * the messages over shared memory (or its self transport), so what a benchmark measures is mostly the
 * Java path.
 *
 * <p>Threading: built and closed by one thread (JMH's setup and tear-down); in {@link ProgressMode#CALLER}
 * mode whoever calls {@link #progressBoth()} drives both workers. Ownership: owns the context (and so the
 * workers and the endpoint); {@link #close()} frees them.
 */
final class WorkerPair implements AutoCloseable {
    /** The context both workers belong to. */
    final UcxContext context;
    /** The receiving side (it accepted the connection). */
    final UcxWorker server;
    /** The sending side. */
    final UcxWorker client;
    /** The client's endpoint to the server. */
    final UcxEndpoint endpoint;
    /** The server's endpoint to the client (the accepted connection). */
    final UcxEndpoint accepted;

    /**
     * Creates both workers and connects them, progressing by hand where the mode needs it.
     *
     * @param mode both workers' progress mode
     * @param peerErrorHandling whether endpoints detect peer failure (UCX then keeps to tcp)
     */
    WorkerPair(ProgressMode mode, boolean peerErrorHandling) throws Exception {
        context = UcxContext.create();
        WorkerOptions options = WorkerOptions.builder()
                .progressMode(mode)
                .peerErrorHandling(peerErrorHandling)
                .build();
        server = context.newWorker(options);
        client = context.newWorker(options);
        CompletableFuture<UcxEndpoint> acceptedFuture = new CompletableFuture<>();
        UcxListener listener = server.listen(0, acceptedFuture::complete);
        UcxFuture<UcxEndpoint> connecting =
                client.connectAsync(new InetSocketAddress("127.0.0.1", listener.port()), null);
        while (!connecting.isDone() || !acceptedFuture.isDone()) {
            if (mode == ProgressMode.CALLER) {
                progressBoth();
            } else {
                Thread.onSpinWait();
            }
        }
        endpoint = connecting.join();
        accepted = acceptedFuture.join();
    }

    /** One round of progress on each worker (caller mode). */
    void progressBoth() {
        client.progress();
        server.progress();
    }

    /** Spins, progressing both workers, until {@code f} is done (caller mode). */
    void progressUntil(CompletableFuture<?> f) {
        while (!f.isDone()) {
            progressBoth();
        }
    }

    /** Closes the endpoints (flushed), then the context with the workers. */
    @Override
    public void close() {
        UcxFuture<Void> a = endpoint.closeAsync(CloseMode.FLUSH);
        UcxFuture<Void> b = accepted.closeAsync(CloseMode.FLUSH);
        if (server.progressMode() == ProgressMode.CALLER) {
            progressUntil(a);
            progressUntil(b);
        }
        a.handle((v, e) -> null).join();
        b.handle((v, e) -> null).join();
        context.close();
    }
}
