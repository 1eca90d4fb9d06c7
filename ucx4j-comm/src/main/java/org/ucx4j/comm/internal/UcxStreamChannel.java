package org.ucx4j.comm.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.comm.CommProtocolException;

/**
 * Handshake records over a UCX endpoint's byte stream (u32 length, then the record): a listener's
 * endpoint belongs to one client, while tags are matched per worker and cannot tell two clients'
 * first messages apart.
 */
final class UcxStreamChannel implements HandshakeChannel {
    private final UcxEndpoint endpoint;

    UcxStreamChannel(UcxEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    @Override
    public void send(byte[] record) {
        byte[] framed = ByteBuffer.allocate(4 + record.length)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putInt(record.length)
                .put(record)
                .array();
        endpoint.streamSend(framed);
    }

    @Override
    public byte[] receive() {
        byte[] len = new byte[4];
        endpoint.streamRecv(len);
        int n = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getInt();
        if (n < 8 || n > MAX_RECORD) {
            throw new CommProtocolException("handshake record of " + Integer.toUnsignedString(n)
                    + " bytes (expected 8.." + MAX_RECORD + "): not a ucx4j-comm peer");
        }
        byte[] rec = new byte[n];
        endpoint.streamRecv(rec);
        return rec;
    }
}
