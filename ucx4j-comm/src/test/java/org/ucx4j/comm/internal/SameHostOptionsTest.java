package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommOptions;

/**
 * What {@code same-host-shared-memory} sets on the UCX context of a worker kept for one same-host peer
 * process, what it leaves to others, and how a same-host token is read.
 */
class SameHostOptionsTest {
    @BeforeAll
    static void noOutsideSettings() {
        for (String name :
                new String[] {"UCX_MM_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING"}) {
            assumeTrue(System.getenv(name) == null, name + " is set in this process's environment");
        }
    }

    private static Map<String, String> options(UcxConfig.Builder b) {
        return UcxRuntime.sameHostOptions(b.build(), "posix,sysv,cma");
    }

    @Test
    void aSameHostWorkerKeepsToSharedMemoryAndReportsPeerFailure() {
        assertEquals(Map.of("TLS", "posix,sysv,cma", "MM_ERROR_HANDLING", "y"), options(UcxConfig.builder()));
    }

    @Test
    void theUsersOwnErrorHandlingSettingWins() {
        for (String name : new String[] {"mm-error-handling", "posix-error-handling", "sysv-error-handling"}) {
            assertEquals(
                    Map.of("TLS", "posix,sysv,cma"), options(UcxConfig.builder().environment(name, "n")), name);
        }
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
    void aTokenNamesAnotherProcessOfThisHostOrNothing() {
        assumeTrue(SameHost.host().isPresent(), "no /proc here");
        String host = SameHost.host().get();
        assertEquals(Optional.of("0123abcd"), SameHost.peerProcess(SameHost.token("0123abcd"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(SameHost.token("ffff"), "ffff"), "this very process");
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes("another boot|0123abcd"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host + "|"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host + "|../../etc"), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host), "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(new byte[0], "ffff"));
        assertEquals(Optional.empty(), SameHost.peerProcess(bytes(host + "|" + "a".repeat(65)), "ffff"));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
