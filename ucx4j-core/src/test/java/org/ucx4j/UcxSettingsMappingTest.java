package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.TestConfigSources.from;
import static org.ucx4j.TestConfigSources.fromEnv;
import static org.ucx4j.TestConfigSources.sources;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The mapping to UCX settings, as distributed-ucxx does it. */
class UcxSettingsMappingTest {

    private static Map<String, String> context(UcxConfig.Builder builder) {
        return from(builder).ucxSettings().contextOptions();
    }

    @Test
    void tcpOnly() {
        assertEquals(
                Map.of("TLS", "tcp", "SOCKADDR_TLS_PRIORITY", "tcp"),
                context(UcxConfig.builder().set(UcxKeys.TCP, true)));
    }

    @Test
    void tcpAndCudaCopy() {
        assertEquals(
                "tcp,cuda_copy",
                context(UcxConfig.builder().set(UcxKeys.TCP, true).set(UcxKeys.CUDA_COPY, true))
                        .get("TLS"));
    }

    @Test
    void nvlinkAddsCudaCopyAndCudaIpc() {
        assertEquals(
                "tcp,cuda_copy,cuda_ipc",
                context(UcxConfig.builder().set(UcxKeys.NVLINK, true)).get("TLS"));
    }

    @Test
    void infinibandPrefixesRc() {
        Map<String, String> ctx =
                context(UcxConfig.builder().set(UcxKeys.TCP, true).set(UcxKeys.INFINIBAND, true));
        assertEquals("rc,tcp", ctx.get("TLS"));
        assertEquals("tcp", ctx.get("SOCKADDR_TLS_PRIORITY"));
    }

    @Test
    void allOn() {
        Map<String, String> ctx = context(UcxConfig.builder()
                .set(UcxKeys.TCP, true)
                .set(UcxKeys.NVLINK, true)
                .set(UcxKeys.INFINIBAND, true)
                .set(UcxKeys.RDMACM, true)
                .set(UcxKeys.CUDA_COPY, true));
        assertEquals("rc,tcp,cuda_copy,cuda_ipc", ctx.get("TLS"));
        assertEquals("rdmacm", ctx.get("SOCKADDR_TLS_PRIORITY"));
        assertEquals(List.of("TLS", "SOCKADDR_TLS_PRIORITY"), List.copyOf(ctx.keySet()));
    }

    @Test
    void allNullGivesNoSettings() {
        UcxConfig config = from(UcxConfig.builder());
        assertTrue(config.ucxSettings().isEmpty());
        assertTrue(config.find(UcxKeys.TCP).isEmpty());
    }

    @Test
    void falseEverywhereGivesNoSettings() {
        assertTrue(from(UcxConfig.builder()
                        .set(UcxKeys.TCP, false)
                        .set(UcxKeys.NVLINK, false)
                        .set(UcxKeys.INFINIBAND, false)
                        .set(UcxKeys.CUDA_COPY, true)
                        .set(UcxKeys.RDMACM, true))
                .ucxSettings()
                .isEmpty());
    }

    @Test
    void netDevicesAndEnvironmentEntries() {
        Map<String, String> ctx = context(UcxConfig.builder()
                .set(UcxKeys.TCP, true)
                .set(UcxKeys.NET_DEVICES, "mlx5_0:1")
                .environment("rndv-thresh", "8192")
                .environment("MAX_RNDV_RAILS", "1"));
        assertEquals(
                Map.of(
                        "TLS",
                        "tcp",
                        "SOCKADDR_TLS_PRIORITY",
                        "tcp",
                        "NET_DEVICES",
                        "mlx5_0:1",
                        "RNDV_THRESH",
                        "8192",
                        "MAX_RNDV_RAILS",
                        "1"),
                ctx);
    }

    @Test
    void environmentClashingWithManagedTlsIsIgnored() {
        UcxConfig config = from(UcxConfig.builder()
                .set(UcxKeys.TCP, true)
                .environment("tls", "all")
                .environment("sockaddr-tls-priority", "rdmacm")
                .environment("rndv-thresh", "1"));
        assertEquals(
                Map.of("TLS", "tcp", "SOCKADDR_TLS_PRIORITY", "tcp", "RNDV_THRESH", "1"),
                config.ucxSettings().contextOptions());
    }

    @Test
    void environmentTlsIsUsedWhenTransportsAreNotManaged() {
        assertEquals(Map.of("TLS", "tcp,self"), context(UcxConfig.builder().environment("tls", "tcp,self")));
    }

    @Test
    void outsideEnvironmentWins() {
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder()
                        .set(UcxKeys.TCP, true)
                        .environment("rndv-thresh", "8192")
                        .environment("log-level", "info")
                        .environment("max-rndv-rails", "2"),
                sources(
                        Map.of("UCX_RNDV_THRESH", "1024", "UCX_LOG_LEVEL", "debug", "UCX_TLS", "all"),
                        Map.of(),
                        List.of()));
        assertEquals(
                Map.of("SOCKADDR_TLS_PRIORITY", "tcp", "MAX_RNDV_RAILS", "2"),
                config.ucxSettings().contextOptions());
        assertTrue(config.ucxSettings().globalOptions().isEmpty());
        // The config itself still reports what it asked for.
        assertEquals("8192", config.environment().get("rndv-thresh"));
    }

    @Test
    void globalOptionsAreSeparated() {
        UcxConfig config = from(UcxConfig.builder()
                .environment("log-level", "info")
                .environment("error-signals", "")
                .environment("mem-events", "n")
                .environment("rndv-thresh", "8192")
                .environment("rcache-enable", "n"));
        assertEquals(
                Map.of("RCACHE_ENABLE", "n", "RNDV_THRESH", "8192"),
                config.ucxSettings().contextOptions());
        assertEquals(
                Map.of("LOG_LEVEL", "info", "ERROR_SIGNALS", "", "MEM_EVENTS", "n"),
                config.ucxSettings().globalOptions());
        assertEquals("info", config.ucxSettings().globalEnvironmentVariables().get("UCX_LOG_LEVEL"));
    }

    @Test
    void globalsAfterLoadAreRefusedWithAClearMessage() {
        UcxConfig config = from(UcxConfig.builder().environment("log-level", "info"));
        assertDoesNotThrow(() -> config.checkGlobalsApplicable(false));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> config.checkGlobalsApplicable(true));
        assertTrue(
                e.getMessage()
                        .startsWith("UCX global option LOG_LEVEL must be set before UCX loads; set UCX_LOG_LEVEL"
                                + " in the environment or configure before first use"),
                e.getMessage());
        assertTrue(e.getMessage().contains("environment.log-level (builder)"), e.getMessage());
        assertDoesNotThrow(() -> config.checkGlobalsApplicable(true, Map.of("LOG_LEVEL", "info")));
        assertThrows(
                IllegalStateException.class, () -> config.checkGlobalsApplicable(true, Map.of("LOG_LEVEL", "warn")));
        assertDoesNotThrow(
                () -> from(UcxConfig.builder().set(UcxKeys.TCP, true)).checkGlobalsApplicable(true));
    }

    @Test
    void daskEnvironmentDrivesTheMapping() {
        UcxConfig config = fromEnv(Map.of(
                "DASK_DISTRIBUTED_UCXX__TCP",
                "True",
                "DASK_DISTRIBUTED_UCXX__NVLINK",
                "true",
                "DASK_DISTRIBUTED_UCXX__ENVIRONMENT__RNDV_THRESH",
                "8192"));
        assertEquals(
                Map.of("TLS", "tcp,cuda_copy,cuda_ipc", "SOCKADDR_TLS_PRIORITY", "tcp", "RNDV_THRESH", "8192"),
                config.ucxSettings().contextOptions());
    }
}
