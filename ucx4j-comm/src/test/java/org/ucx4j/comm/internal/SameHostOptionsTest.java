package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;
import org.ucx4j.comm.CommKeys;

/** What {@code same-host-shared-memory} sets on the comms' UCX context, and what it leaves to others. */
class SameHostOptionsTest {
    @BeforeAll
    static void noOutsideSettings() {
        for (String name : new String[] {
            "UCX_MM_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING", "UCX_KEEPALIVE_INTERVAL"
        }) {
            assumeTrue(System.getenv(name) == null, name + " is set in this process's environment");
        }
    }

    private static Map<String, String> options(UcxConfig.Builder b) {
        return UcxRuntime.commOptions(b.build());
    }

    private static UcxConfig.Builder on() {
        return UcxConfig.builder().set(CommKeys.SAME_HOST_SHARED_MEMORY, true);
    }

    @Test
    void onSharedMemoryReportsPeerFailureAndPeersAreCheckedOftenEnough() {
        assertEquals(Map.of("MM_ERROR_HANDLING", "y", "KEEPALIVE_INTERVAL", "200ms"), options(on()));
    }

    @Test
    void byDefaultOrWithoutPeerErrorHandlingNothingIsSet() {
        assertEquals(Map.of(), options(UcxConfig.builder()));
        // Without peer error handling UCX uses shared memory anyway, and detects nothing.
        assertEquals(Map.of(), options(on().set(UcxKeys.PEER_ERROR_HANDLING, false)));
    }

    @Test
    void theUsersOwnUcxSettingsWin() {
        for (String name : new String[] {"mm-error-handling", "posix-error-handling", "sysv-error-handling"}) {
            assertEquals(Map.of("KEEPALIVE_INTERVAL", "200ms"), options(on().environment(name, "n")), name);
        }
        assertEquals(Map.of("MM_ERROR_HANDLING", "y"), options(on().environment("keepalive-interval", "1s")));
    }

    @Test
    void configurationsThatDifferOnlyInTheKeyDoNotShareARuntime() {
        assertNotEquals(UcxRuntime.Key.of(UcxConfig.builder().build()), UcxRuntime.Key.of(on().build()));
    }
}
