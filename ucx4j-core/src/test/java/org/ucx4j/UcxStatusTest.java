package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Status codes and the exception mapping, without needing UCX (the message uses UCX's own text when the
 * library happens to be loadable, and a fallback otherwise; neither is asserted).
 */
class UcxStatusTest {
    @Test
    void everyNamedCodeRoundTrips() {
        Set<Integer> codes = new HashSet<>();
        for (UcxStatus s : UcxStatus.values()) {
            assertSame(s, UcxStatus.of(s.code()), s.name());
            assertTrue(codes.add(s.code()), "duplicate code " + s.code() + " at " + s.name());
        }
        assertEquals(0, UcxStatus.OK.code());
        assertEquals(-25, UcxStatus.CONNECTION_RESET.code());
        assertEquals(-80, UcxStatus.ENDPOINT_TIMEOUT.code());
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 42, -26, -39, -40, -59, -60, -89, -90, -100, -1000, Integer.MAX_VALUE})
    void unknownCodesMapToUnknownAndKeepTheRawValue(int code) {
        assertSame(UcxStatus.UNKNOWN, UcxStatus.of(code));
        UcxException e = UcxException.of("ucp_test_call", code, null);
        assertSame(UcxStatus.UNKNOWN, e.status());
        assertEquals(code, e.rawStatus());
        assertTrue(e.getMessage().contains(Integer.toString(code)), e.getMessage());
    }

    @Test
    void peerFailureRangeIsMinus40ToMinus89() {
        assertTrue(UcxStatus.isPeerFailure(-40));
        assertTrue(UcxStatus.isPeerFailure(-60));
        assertTrue(UcxStatus.isPeerFailure(-89));
        assertFalse(UcxStatus.isPeerFailure(-39));
        assertFalse(UcxStatus.isPeerFailure(-90));
        assertFalse(UcxStatus.isPeerFailure(UcxStatus.CONNECTION_RESET.code()));
    }

    private static void assertMaps(int code, Class<? extends UcxException> expected) {
        UcxException e = UcxException.of("ucp_some_call", code, "peer 10.0.0.1:1234");
        assertSame(expected, e.getClass(), "status " + code + " (" + UcxStatus.of(code) + ")");
        assertEquals(code, e.rawStatus());
        assertEquals(UcxStatus.of(code), e.status());
        assertEquals("ucp_some_call", e.call());
    }

    @Test
    void ofPicksTheSubclassCallersBranchOn() {
        assertMaps(UcxStatus.CANCELED.code(), UcxCanceledException.class);
        assertMaps(UcxStatus.TIMED_OUT.code(), UcxTimeoutException.class);
        assertMaps(UcxStatus.ENDPOINT_TIMEOUT.code(), UcxTimeoutException.class);
        assertMaps(UcxStatus.CONNECTION_RESET.code(), UcxConnectionResetException.class);
        assertMaps(UcxStatus.UNREACHABLE.code(), UcxUnreachableException.class);
        assertMaps(UcxStatus.REJECTED.code(), UcxUnreachableException.class);
        assertMaps(UcxStatus.INVALID_PARAM.code(), UcxException.class);
        assertMaps(UcxStatus.NO_MEMORY.code(), UcxException.class);
        assertMaps(UcxStatus.MESSAGE_TRUNCATED.code(), UcxException.class);
    }

    @ParameterizedTest
    @ValueSource(ints = {-40, -45, -59, -60, -79, -81, -89})
    void linkAndEndpointFailuresAreConnectionResets(int code) {
        assertMaps(code, UcxConnectionResetException.class);
    }

    @Test
    void codesOutsideThePeerRangeAreNotConnectionResets() {
        assertMaps(-39, UcxException.class);
        assertMaps(-90, UcxException.class);
    }

    @Test
    void messageNamesTheCallTheStatusAndTheDetail() {
        UcxException e = UcxException.of("ucp_ep_create", UcxStatus.CONNECTION_RESET.code(), "peer 10.0.0.1:1234");
        String m = e.getMessage();
        assertTrue(m.contains("ucp_ep_create"), m);
        assertTrue(m.contains("UCS_ERR_CONNECTION_RESET"), m);
        assertTrue(m.contains("peer 10.0.0.1:1234"), m);

        String noDetail = UcxException.of("ucp_worker_create", UcxStatus.INVALID_PARAM.code(), null)
                .getMessage();
        assertTrue(noDetail.contains("ucp_worker_create") && noDetail.contains("UCS_ERR_INVALID_PARAM"), noDetail);
        assertFalse(noDetail.contains("null"), noDetail);

        String canceled = new UcxCanceledException("endpoint close", "endpoint closed").getMessage();
        assertTrue(canceled.contains("UCS_ERR_CANCELED") && canceled.contains("endpoint closed"), canceled);
        assertEquals(UcxStatus.CANCELED, new UcxCanceledException("x", null).status());
    }
}
