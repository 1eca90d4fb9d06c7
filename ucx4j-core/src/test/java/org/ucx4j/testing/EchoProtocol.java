package org.ucx4j.testing;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;

/**
 * The tiny protocol between tests and {@link PeerMain}'s echo server. After connecting, a client sends
 * its 32-bit id on the stream. Tag messages carry the client id in the upper 32 bits of the tag; the
 * server echoes each one to that client with {@link #REPLY_BIT} set. Stream echo: an 8-byte
 * little-endian length, then that many bytes, echoed back the same way.
 */
public final class EchoProtocol {
    /** Set in the tag of every echo reply. */
    public static final long REPLY_BIT = 1L << 31;
    /** Largest message the echo server accepts. */
    public static final long MAX_MESSAGE = 64L << 20;

    private EchoProtocol() {}

    /** A tag for client {@code id} and sequence {@code seq}. */
    public static long tag(int id, int seq) {
        return ((long) id << 32) | (seq & 0x7FFF_FFFFL);
    }

    /** Sends the client's id on the stream. */
    public static void hello(UcxEndpoint ep, int id) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(4);
            s.set(ValueLayout.JAVA_INT_UNALIGNED, 0, id);
            ep.streamSend(s);
        }
    }

    /** Sends {@code data} with {@code tag} and receives the echo into {@code into}; returns the echo's length. */
    public static long echoTag(UcxWorker worker, UcxEndpoint ep, MemorySegment data, MemorySegment into, long tag) {
        var reply = ep.worker().tagRecvAsync(into, tag | REPLY_BIT, -1L, ep);
        ep.tagSend(data, tag);
        return worker.await(reply).length();
    }

    /** Stream echo of {@code data} into {@code into}. */
    public static void echoStream(UcxEndpoint ep, MemorySegment data, MemorySegment into) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment len = a.allocate(8);
            len.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, data.byteSize());
            var replyLen = a.allocate(8);
            var rl = ep.streamRecvAsync(replyLen);
            ep.streamSend(len);
            ep.streamSend(data);
            ep.worker().await(rl);
            if (replyLen.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) != data.byteSize()) {
                throw new AssertionError("stream echo length mismatch");
            }
            if (data.byteSize() > 0) {
                ep.streamRecv(into.asSlice(0, data.byteSize()));
            }
        }
    }
}
