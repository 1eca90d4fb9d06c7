package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testing.Loopback;
import org.ucx4j.testsupport.Requirements;

/** The configuration is applied to UCX, not only computed: read back from UCX itself. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@Tag("native")
class ConfigAppliedTest {
    @Test
    void tcpOnlyConfigMakesUcxUseOnlyTcp() throws Exception {
        Requirements.assumeUcx();
        UcxConfig config = UcxConfig.builder().set(UcxKeys.TCP, true).build();
        try (UcxContext ctx = UcxContext.builder().config(config).build()) {
            assertEquals(java.util.List.of("tcp"), ctx.transports(), "resources: " + ctx.resources());
            String effective = ctx.describeConfig();
            assertTrue(effective.contains("UCX_TLS=tcp\n"), effective);
            assertTrue(effective.contains("UCX_SOCKADDR_TLS_PRIORITY=tcp\n"), effective);
            // And it still works end to end over tcp.
            try (UcxWorker server = ctx.newWorker();
                    UcxWorker client = ctx.newWorker()) {
                UcxEndpoint ep = Loopback.connect(server, client).client();
                UcxFuture<TagInfo> r = server.tagRecvAsync(new byte[16], 3, -1L);
                ep.tagSend(new byte[16], 3);
                assertEquals(16, server.await(r, Duration.ofSeconds(10)).length());
            }
        }
    }

    @Test
    void builderOptionsWinOverConfigAndBadOptionsNameTheKey() {
        Requirements.assumeUcx();
        UcxConfig config = UcxConfig.builder().set(UcxKeys.TCP, true).build();
        try (UcxContext ctx =
                UcxContext.builder().config(config).option("TLS", "tcp,self").build()) {
            assertTrue(ctx.describeConfig().contains("UCX_TLS=tcp,self\n"));
        }
        // UCX 1.13 takes unknown names (they may be transport options, checked when transports open),
        // but rejects bad values of known ones: the error names the option and the value.
        UcxException e = org.junit.jupiter.api.Assertions.assertThrows(UcxException.class, () -> UcxContext.builder()
                .config(UcxConfig.builder().build())
                .option("RNDV_THRESH", "abc")
                .build());
        assertTrue(e.getMessage().contains("UCX_RNDV_THRESH='abc'"), e.getMessage());
        assertEquals(UcxStatus.INVALID_PARAM, e.status());
    }

    @Test
    void workerOptionsComeFromTheConfig() {
        Requirements.assumeUcx();
        UcxConfig config = UcxConfig.builder()
                .set(UcxKeys.PROGRESS_MODE, ProgressMode.CALLER)
                .set(UcxKeys.CONNECT_TIMEOUT, Duration.ofMillis(1500))
                .set(UcxKeys.PEER_ERROR_HANDLING, false)
                .set(UcxKeys.PROGRESS_SPIN, Duration.ZERO)
                .build();
        try (UcxContext ctx = UcxContext.builder().config(config).build();
                UcxWorker w = ctx.newWorker()) {
            assertEquals(ProgressMode.CALLER, w.progressMode());
            assertEquals(Duration.ofMillis(1500), w.options().connectTimeout());
            assertEquals(false, w.options().peerErrorHandling());
            assertEquals(Duration.ZERO, w.options().spin());
        }
        assertEquals(WorkerOptions.DEFAULT_SPIN, UcxConfig.builder().build().get(UcxKeys.PROGRESS_SPIN));
        assertEquals(
                Duration.ofNanos(20_000),
                UcxConfig.builder().set("progress-spin", "20us").build().get(UcxKeys.PROGRESS_SPIN));
        assertTrue(
                UcxConfig.builder().build().get(UcxKeys.PEER_ERROR_HANDLING), "peer error handling is on by default");
    }
}
