package org.ucx4j.comm.internal;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import org.ucx4j.CloseMode;
import org.ucx4j.UcxContext;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;
import org.ucx4j.WorkerAddress;
import org.ucx4j.comm.CommOptions;

/**
 * A hand-made {@code ucx://} client for hostile-input tests: a plain socket to the listener's port
 * and a UCX worker of its own, which it connects to the listener's worker once a handshake told it
 * where. Every step is separate, so a test can stop or misbehave at any of them.
 */
final class RawUcxClient implements AutoCloseable {
    /**
     * The UCX settings of the listener's shared worker (UCX's defaults): this client declines the
     * listener's offer of same-host workers, so its endpoint pairs with the shared one.
     */
    final UcxContext context = UcxContext.builder().build();

    final UcxWorker worker = context.newWorker();
    final SocketChannel socket;
    /** The tag this client says its comm receives on. */
    final long myTag = 0x1234_5678_9abc_def0L;

    UcxEndpoint endpoint;
    Handshake.Result result;

    RawUcxClient(URI listener) throws Exception {
        socket = SocketChannel.open(new InetSocketAddress("127.0.0.1", listener.getPort()));
    }

    void sendBytes(byte[] bytes) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            socket.write(b);
        }
    }

    byte[] receiveRecord() throws Exception {
        return new StreamHandshakeChannel(socket).receive();
    }

    /** A correct client handshake; then a UCX endpoint to the listener's worker. */
    Handshake.Result handshake(CommOptions options, String addressUsed) throws Exception {
        result = Handshake.client(
                new StreamHandshakeChannel(socket),
                options,
                0,
                addressUsed,
                null,
                offer -> new Handshake.Endpoint(myTag, worker.address().bytes()));
        endpoint = worker.connect(WorkerAddress.of(result.peerEndpoint().workerAddress()));
        return result;
    }

    /** A tag message to the listener's comm (after {@link #handshake}). */
    void sendToComm(byte[] bytes) {
        endpoint.tagSend(bytes, result.peerTag());
    }

    @Override
    public void close() throws Exception {
        try {
            socket.close();
            if (endpoint != null) {
                endpoint.closeAsync(CloseMode.FORCE);
            }
        } finally {
            worker.close();
            context.close();
        }
    }
}
