package org.ucx4j.comm.internal;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import org.ucx4j.comm.CommProtocolException;

/** Handshake records over a TCP socket: a little-endian u32 length, then the record. */
final class StreamHandshakeChannel implements HandshakeChannel {
    private final SocketChannel channel;

    StreamHandshakeChannel(SocketChannel channel) {
        this.channel = channel;
    }

    @Override
    public void send(byte[] record) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4 + record.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(record.length).put(record).flip();
        while (b.hasRemaining()) {
            channel.write(b);
        }
    }

    @Override
    public byte[] receive() throws IOException {
        ByteBuffer len = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        readFully(len);
        int n = len.getInt(0);
        if (n < 8 || n > MAX_RECORD) {
            throw new CommProtocolException("handshake record of " + Integer.toUnsignedString(n)
                    + " bytes (expected 8.." + MAX_RECORD + "): not a ucx4j-comm peer");
        }
        ByteBuffer rec = ByteBuffer.allocate(n);
        readFully(rec);
        return rec.array();
    }

    private void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) {
                throw new EOFException("connection closed during the handshake");
            }
        }
    }
}
