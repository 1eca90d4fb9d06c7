package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testsupport.Requirements;

/**
 * Tag operations on native memory whose kind the caller declares (UCX is told it instead of detecting
 * it): the bytes arrive as with detection, in both directions and for sizes around the eager and
 * rendezvous thresholds, and a declaration on heap memory, which the core stages itself, is refused.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class DeclaredMemoryKindTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void declaredHostMemoryCarriesTheBytesEitherWay() throws Exception {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker server = ctx.newWorker();
                UcxWorker client = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            LinkedBlockingQueue<UcxEndpoint> accepted = new LinkedBlockingQueue<>();
            UcxListener listener = server.listen(0, accepted::add);
            UcxEndpoint ep = client.connect("127.0.0.1", listener.port());
            UcxEndpoint back = accepted.poll(30, TimeUnit.SECONDS);
            int tag = 1;
            for (long size : new long[] {1, 8, 1024, 8192, 65_536, 1 << 20}) {
                MemorySegment out = arena.allocate(size);
                for (long i = 0; i < size; i++) {
                    out.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + size));
                }
                // Declared on both sides, then declared on the receive only (the sender lets UCX detect).
                for (boolean declareSend : new boolean[] {true, false}) {
                    MemorySegment in = arena.allocate(size);
                    UcxFuture<TagInfo> got = server.tagRecvAsync(in, MemoryKind.HOST, tag, -1L, back);
                    UcxFuture<Void> sent =
                            declareSend ? ep.tagSendAsync(out, MemoryKind.HOST, tag) : ep.tagSendAsync(out, tag);
                    assertEquals(size, server.await(got, WAIT).length());
                    client.await(sent, WAIT);
                    assertEquals(-1, out.mismatch(in), size + " bytes, sender declared: " + declareSend);
                    tag++;
                }
                // The other way: the accepted endpoint sends, declared; the client receives undeclared.
                MemorySegment in = arena.allocate(size);
                UcxFuture<TagInfo> got = client.tagRecvAsync(in, tag, -1L, ep);
                UcxFuture<Void> sent = back.tagSendAsync(out, MemoryKind.HOST, tag);
                assertEquals(size, client.await(got, WAIT).length());
                server.await(sent, WAIT);
                assertEquals(-1, out.mismatch(in), size + " bytes back");
                tag++;
            }
            assertThrows(
                    IllegalArgumentException.class,
                    () -> ep.tagSendAsync(MemorySegment.ofArray(new byte[8]), MemoryKind.HOST, 99));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> server.tagRecvAsync(MemorySegment.ofArray(new byte[8]), MemoryKind.HOST, 99, -1L, back));
            assertThrows(NullPointerException.class, () -> ep.tagSendAsync(arena.allocate(8), null, 99));
            listener.close();
        }
    }
}
