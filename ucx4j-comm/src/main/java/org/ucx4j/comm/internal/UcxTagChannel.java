package org.ucx4j.comm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.ucx4j.TagInfo;
import org.ucx4j.UcxEndpoint;

/**
 * Handshake records as tag messages, for IP-less ({@code ucx-worker://}) connections, where there is
 * no stream before both sides have an endpoint. Each side receives on its own tag; the client's first
 * record goes to the listener's accept tag, and it learns the listener's tag from the
 * listener's HELLO.
 */
final class UcxTagChannel implements HandshakeChannel {
    private final UcxEndpoint endpoint;
    private final long myTag;
    private volatile long peerTag;

    UcxTagChannel(UcxEndpoint endpoint, long myTag, long firstPeerTag) {
        this.endpoint = endpoint;
        this.myTag = myTag;
        this.peerTag = firstPeerTag;
    }

    @Override
    public void send(byte[] record) {
        endpoint.tagSend(record, peerTag);
    }

    @Override
    public byte[] receive() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(MAX_RECORD);
            TagInfo info = endpoint.worker().tagRecv(buf, myTag, -1L, endpoint);
            byte[] rec = buf.asSlice(0, info.length()).toArray(ValueLayout.JAVA_BYTE);
            if (UcxRuntime.isAcceptTag(peerTag) && rec.length >= 8 && rec[6] == Handshake.HELLO) {
                peerTag = Handshake.parseHello(rec).tag();
            }
            return rec;
        }
    }

    long peerTag() {
        return peerTag;
    }
}
