package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;

/**
 * What {@code same-host-shared-memory} sets on the UCX context of a worker kept for one same-host peer
 * process, what it leaves to others, and how a same-host token is read.
 */
class SameHostOptionsTest {
    @Test
    void aSameHostWorkerKeepsToItsTransportsAndReportsPeerFailureWhateverTheConfigurationSays() {
        // The error handling options are for the shared worker: a same-host worker without them would have
        // no lane at all under peer error handling, and two processes that differ would pick different ones.
        Map<String, String> expected = Map.ofEntries(
                Map.entry("TLS", "sysv,cma"),
                Map.entry("MM_ERROR_HANDLING", "y"),
                Map.entry("POSIX_ERROR_HANDLING", "y"),
                Map.entry("SYSV_ERROR_HANDLING", "y"),
                // Both sides of a pair must agree on these: a sender writes into the receiver's FIFO by
                // its own idea of the FIFO's length, its elements' size and the segments' size. MM_ is the only
                // name UCX 1.13 applies to sysv and posix (it drops SYSV_ and POSIX_ ones silently).
                Map.entry("MM_SEG_SIZE", "32832"),
                Map.entry("SYSV_SEG_SIZE", "32832"),
                Map.entry("POSIX_SEG_SIZE", "32832"),
                Map.entry("MM_FIFO_SIZE", "256"),
                Map.entry("SYSV_FIFO_SIZE", "256"),
                Map.entry("POSIX_FIFO_SIZE", "256"),
                Map.entry("MM_FIFO_ELEM_SIZE", "128"),
                Map.entry("SYSV_FIFO_ELEM_SIZE", "128"),
                Map.entry("POSIX_FIFO_ELEM_SIZE", "128"),
                Map.entry("MM_RX_BUFS_GROW", "264"),
                Map.entry("SYSV_RX_BUFS_GROW", "264"),
                Map.entry("POSIX_RX_BUFS_GROW", "264"));
        assertEquals(expected, UcxRuntime.sameHostOptions("sysv,cma"));
        UcxConfig userSaysNo =
                UcxConfig.builder().environment("mm-error-handling", "n").build();
        assertEquals(
                expected,
                UcxRuntime.Key.of(userSaysNo)
                        .sameHost(userSaysNo, "sysv,cma", "aa")
                        .commOptions());
    }

    @Test
    void theKeyLeavesTheSharedRuntimeAsItIs() {
        // The shared worker is the same whatever the key says: processes that disagree still pair there.
        UcxConfig on = UcxConfig.builder().build();
        UcxConfig off =
                UcxConfig.builder().set(CommKeys.SAME_HOST_SHARED_MEMORY, false).build();
        assertEquals(UcxRuntime.Key.of(on), UcxRuntime.Key.of(off));
        assertEquals(Map.of(), UcxRuntime.Key.of(on).commOptions());
        UcxRuntime.Key a = UcxRuntime.Key.of(on).sameHost(on, "posix", "aa");
        assertTrue(a.isSameHost());
        assertFalse(UcxRuntime.Key.of(on).isSameHost());
        assertNotEquals(UcxRuntime.Key.of(on), a);
        assertNotEquals(a, UcxRuntime.Key.of(on).sameHost(on, "posix", "bb"), "a worker per peer process");
        assertEquals(a, UcxRuntime.Key.of(on).sameHost(on, "posix", "aa"));
    }

    @Test
    void sameHostWorkersNeedTheKeyAndPeerErrorHandling() {
        assumeTrue(SameHost.host().isPresent(), "no /proc here");
        assertTrue(SameHost.wanted(CommOptions.defaults()));
        assertFalse(SameHost.wanted(CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.SAME_HOST_SHARED_MEMORY, false)
                        .build())
                .build()));
        assertFalse(SameHost.wanted(CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(UcxKeys.PEER_ERROR_HANDLING, false)
                        .build())
                .build()));
    }

    @Test
    @Tag("native")
    void aTokenNamesAnotherProcessOfThisHostOrNothing() {
        assumeTrue(SameHost.host().isPresent(), "no /proc here");
        String[] version = Ucx.version().split("\\.");
        String ucx = " ucx " + version[0] + "." + version[1];
        String host = SameHost.hostPart().orElseThrow();
        assertEquals(SameHost.host().get() + ucx + " mm 32832/256/128", host);
        assertEquals(Optional.of("0123abcd"), SameHost.peerProcess(SameHost.token("0123abcd"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(SameHost.token("ffff"), "ffff"), "this very process");
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes("another boot|0123abcd"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host + "|"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host + "|../../etc"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(new byte[0], "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host + "|" + "a".repeat(65)), "ffff"));
        // A process that would use the shared memory otherwise (another UCX, another segment size or FIFO
        // length) does not pair: its sends would overrun this side's segments or FIFO.
        assertEquals(Optional.of("0123abcd"), SameHost.peerProcess(bytes(host + "|0123abcd"), "ffff"));
        assertEquals(
                Optional.empty(), SameHost.peerProcess(bytes(SameHost.host().get() + "|0123abcd"), "ffff"));
        assertEquals(
                Optional.empty(),
                SameHost.peerProcess(
                        bytes(host.replace(" mm 32832/256/128", " mm 8256/256/128") + "|0123abcd"), "ffff"));
        assertEquals(
                Optional.empty(),
                SameHost.peerProcess(
                        bytes(host.replace(" mm 32832/256/128", " mm 32832/64/128") + "|0123abcd"), "ffff"));
        assertEquals(
                Optional.empty(),
                SameHost.peerProcess(
                        bytes(host.replace(" mm 32832/256/128", " mm 32832/256/256") + "|0123abcd"), "ffff"));
        assertEquals(
                Optional.empty(), SameHost.peerProcess(bytes(host.replace(ucx, " ucx 1.99") + "|0123abcd"), "ffff"));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
