package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testing.EchoProtocol;
import org.ucx4j.testing.PeerMain;
import org.ucx4j.testsupport.Requirements;
import org.ucx4j.testsupport.RunningJvm;

/** IP-less connections: endpoints made from worker addresses, with no listener anywhere. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class WorkerAddressTest {
    @TempDir
    Path dir;

    @Test
    void printableFormRoundTripsAndRejectsGarbage() {
        WorkerAddress a = WorkerAddress.of(new byte[] {1, 2, 3, (byte) 0xff});
        assertEquals(a, WorkerAddress.parse(a.toString()));
        assertEquals(4, a.length());
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> WorkerAddress.parse("not base64!"));
        assertTrue(e.getMessage().contains("worker address"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> WorkerAddress.of(new byte[0]));
    }

    @Tag("native")
    @Test
    void twoWorkersInOneProcessConnectByAddress() {
        Requirements.assumeUcx();
        try (UcxContext ctx = UcxContext.create();
                UcxWorker a = ctx.newWorker();
                UcxWorker b = ctx.newWorker()) {
            WorkerAddress address = a.address();
            assertTrue(address.length() > 0);
            try (UcxEndpoint ep = b.connect(address)) {
                assertTrue(ep.peer().isEmpty(), "no socket address for an address-made endpoint");
                UcxFuture<TagInfo> r = a.tagRecvAsync(new byte[5], 1, -1L);
                ep.tagSend("hello".getBytes(), 1);
                assertEquals(5, a.await(r, Duration.ofSeconds(10)).length());
            }
        }
    }

    @Tag("native")
    @Test
    void twoProcessesExchangeAddressesThroughAFile() throws Exception {
        Requirements.assumeUcx();
        Path file = dir.resolve("server.address");
        try (RunningJvm server = PeerMain.start(Map.of(), "address-server", file.toString());
                UcxContext ctx = UcxContext.create();
                UcxWorker worker = ctx.newWorker();
                Arena arena = Arena.ofShared()) {
            server.awaitLine("ADDRESS-WRITTEN", Duration.ofSeconds(30));
            WorkerAddress serverAddress = WorkerAddress.parse(Files.readString(file));
            UcxEndpoint ep = worker.connect(serverAddress);
            ep.tagSend(worker.address().bytes(), PeerMain.ADDRESS_HELLO_TAG);
            server.awaitLine("CONNECTED-BACK", Duration.ofSeconds(30));
            MemorySegment out = arena.allocate(100_000);
            for (int i = 0; i < out.byteSize(); i++) {
                out.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 7));
            }
            MemorySegment in = arena.allocate(100_000);
            long n = EchoProtocol.echoTag(worker, ep, out, in, EchoProtocol.tag(5, 1));
            assertEquals(100_000, n);
            assertEquals(-1L, out.mismatch(in));
        }
    }
}
