package org.ucx4j.testing;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxListener;
import org.ucx4j.UcxWorker;

/**
 * A connected pair of endpoints between two workers (of one process) over loopback, for tests that
 * need both ends at hand.
 *
 * @param client the endpoint the client worker connected
 * @param server the endpoint the server worker accepted
 * @param listener the server's listener (closed with its worker)
 */
public record Loopback(UcxEndpoint client, UcxEndpoint server, UcxListener listener) {
    /** Listens on an ephemeral port of {@code server}, connects {@code client} to it, waits for the accept. */
    public static Loopback connect(UcxWorker server, UcxWorker client) throws Exception {
        CompletableFuture<UcxEndpoint> accepted = new CompletableFuture<>();
        UcxListener listener = server.listen(0, accepted::complete);
        UcxEndpoint clientEnd = client.connect("127.0.0.1", listener.port());
        return new Loopback(clientEnd, accepted.get(10, TimeUnit.SECONDS), listener);
    }
}
