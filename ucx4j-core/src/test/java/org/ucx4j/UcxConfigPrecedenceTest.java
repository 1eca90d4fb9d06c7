package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.TestConfigSources.fromEnv;
import static org.ucx4j.TestConfigSources.fromFile;
import static org.ucx4j.TestConfigSources.sources;
import static org.ucx4j.TestConfigSources.yaml;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Which source wins, key by key, and the legacy fallback. */
class UcxConfigPrecedenceTest {
    @TempDir
    Path dir;

    @RegisterExtension
    final RecordedConfigWarnings recorded = new RecordedConfigWarnings();

    private final List<String> warnings = recorded.messages();

    private String source(UcxConfig config, String key) {
        return config.entries().stream()
                .filter(e -> e.key().equals(key))
                .findFirst()
                .orElseThrow()
                .source();
    }

    private static final String ALL_SOURCES_YAML = """
            ucx4j:
              connect-timeout: 4s
              net-devices: from-ucx4j-file
              max-frames: 4
            distributed-ucxx:
              connect-timeout: 5s
              net-devices: from-ucxx-file
              max-frames: 5
              multi-buffer: true
              rmm:
                pool-size: 5GB
            distributed:
              comm:
                ucx:
                  connect-timeout: 7s
                  max-frames: 7
                  multi-buffer: false
                  create-cuda-context: true
                  infiniband: true
              rmm:
                pool-size: 7GB
            """;

    @Test
    void eachKeyTakesTheHighestSourceThatSetsIt() {
        Path file = yaml(dir, ALL_SOURCES_YAML);
        Map<String, String> env = Map.of(
                "UCX4J__CONNECT_TIMEOUT", "3s",
                "UCX4J__NET_DEVICES", "from-ucx4j-env",
                "DASK_DISTRIBUTED_UCXX__NET_DEVICES", "from-ucxx-env",
                "DASK_DISTRIBUTED_UCXX__MAX_FRAMES", "55",
                "DASK_DISTRIBUTED__COMM__UCX__TCP", "true",
                "DASK_UCX__RDMACM", "true");
        Map<String, String> props = Map.of("ucx4j.connect-timeout", "2s", "ucx4j.progress-mode", "caller");
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder().set(UcxKeys.CONNECT_TIMEOUT, Duration.ofSeconds(1)),
                sources(env, props, List.of(file)));

        assertEquals(Duration.ofSeconds(1), config.get(UcxKeys.CONNECT_TIMEOUT));
        assertEquals("builder", source(config, "connect-timeout"));
        assertEquals(ProgressMode.CALLER, config.get(UcxKeys.PROGRESS_MODE));
        assertEquals("-Ducx4j.progress-mode", source(config, "progress-mode"));
        assertEquals(Optional.of("from-ucx4j-env"), config.find(UcxKeys.NET_DEVICES));
        assertEquals("env UCX4J__NET_DEVICES", source(config, "net-devices"));
        assertEquals(4, config.get(ModuleKeysForTests.MAX_FRAMES));
        assertEquals(file + ":4", source(config, "max-frames"));
        // Dask's env beats Dask's YAML, as in Dask.
        assertEquals(Optional.of(true), config.find(ModuleKeysForTests.MULTI_BUFFER));
        assertEquals(file + ":9 (distributed-ucxx.multi-buffer)", source(config, "multi-buffer"));
        assertEquals(Optional.of(5_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        // Legacy keys fill in what nothing newer sets.
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
        assertEquals("env DASK_DISTRIBUTED__COMM__UCX__TCP (distributed.comm.ucx.tcp)", source(config, "tcp"));
        assertEquals(Optional.of(true), config.find(UcxKeys.CREATE_CUDA_CONTEXT));
        assertEquals(Optional.of(true), config.find(UcxKeys.INFINIBAND));
        assertEquals(Optional.of(true), config.find(UcxKeys.RDMACM));
        assertEquals("env DASK_UCX__RDMACM (ucx.rdmacm)", source(config, "rdmacm"));
        assertEquals("default", source(config, "max-frame-size"));
        assertEquals(64L << 30, config.get(ModuleKeysForTests.MAX_FRAME_SIZE));
        assertEquals(file, config.configFile().orElseThrow());
        assertEquals("rc,tcp", config.ucxSettings().contextOptions().get("TLS"));
        assertEquals("rdmacm", config.ucxSettings().contextOptions().get("SOCKADDR_TLS_PRIORITY"));
    }

    @Test
    void daskEnvironmentBeatsDaskFileButNotUcx4jFile() {
        Path file = yaml(dir, ALL_SOURCES_YAML);
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder(),
                sources(
                        Map.of(
                                "DASK_DISTRIBUTED_UCXX__MAX_FRAMES",
                                "55",
                                "DASK_DISTRIBUTED_UCXX__CONNECT_TIMEOUT",
                                "55s"),
                        Map.of(),
                        List.of(file)));
        assertEquals(4, config.get(ModuleKeysForTests.MAX_FRAMES));
        assertEquals(Duration.ofSeconds(4), config.get(UcxKeys.CONNECT_TIMEOUT));
        UcxConfig withoutUcx4jBlock = TestConfigSources.build(
                UcxConfig.builder(),
                sources(
                        Map.of("DASK_DISTRIBUTED_UCXX__MAX_FRAMES", "55"),
                        Map.of(),
                        List.of(yaml(
                                dir,
                                ALL_SOURCES_YAML.replaceFirst(
                                        "(?s)ucx4j:.*?distributed-ucxx:", "distributed-ucxx:")))));
        assertEquals(55, withoutUcx4jBlock.get(ModuleKeysForTests.MAX_FRAMES));
    }

    @Test
    void newKeySetToFalseBeatsLegacyTrue() {
        UcxConfig config = fromEnv(Map.of(
                "DASK_DISTRIBUTED_UCXX__NVLINK", "false",
                "DASK_DISTRIBUTED__COMM__UCX__NVLINK", "true",
                "DASK_DISTRIBUTED__COMM__UCX__TCP", "true"));
        assertEquals(Optional.of(false), config.find(UcxKeys.NVLINK));
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
        assertEquals("tcp", config.ucxSettings().contextOptions().get("TLS"));
        // Only the legacy key actually read warns.
        assertEquals(1, warnings.size(), warnings.toString());
        assertTrue(
                warnings.get(0).contains("DASK_DISTRIBUTED__COMM__UCX__TCP (distributed.comm.ucx.tcp) is a deprecated"),
                warnings.get(0));
        assertTrue(warnings.get(0).contains("'distributed-ucxx.tcp'"), warnings.get(0));
    }

    @Test
    void newKeyNoneFallsBackToLegacy() {
        UcxConfig config = fromEnv(Map.of(
                "DASK_DISTRIBUTED_UCXX__TCP", "none",
                "DASK_DISTRIBUTED__COMM__UCX__TCP", "true"));
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
    }

    @Test
    void ucx4jNoneWinsOverLowerSources() {
        UcxConfig config = fromEnv(Map.of("UCX4J__TCP", "none", "DASK_DISTRIBUTED_UCXX__TCP", "true"));
        assertEquals(Optional.empty(), config.find(UcxKeys.TCP));
        assertEquals("env UCX4J__TCP", source(config, "tcp"));
    }

    @Test
    void newKeyFalseInFileBeatsLegacyTrueInFile() {
        UcxConfig config = fromFile(yaml(dir, """
                distributed-ucxx:
                  tcp: false
                  nvlink: null
                distributed:
                  comm:
                    ucx:
                      tcp: true
                      nvlink: true
                """));
        assertEquals(Optional.of(false), config.find(UcxKeys.TCP));
        assertEquals(Optional.of(true), config.find(UcxKeys.NVLINK));
    }

    @Test
    void deprecationWarningIsLoggedOncePerKeyPerProcess() {
        Map<String, String> env =
                Map.of("DASK_DISTRIBUTED__COMM__UCX__TCP", "true", "DASK_DISTRIBUTED__RMM__POOL_SIZE", "1GB");
        fromEnv(env);
        fromEnv(env);
        fromEnv(Map.of("DASK_DISTRIBUTED__COMM__UCX__TCP", "false"));
        assertEquals(2, warnings.size(), warnings.toString());
        assertTrue(
                warnings.stream()
                        .anyMatch(w -> w.contains("(distributed.rmm.pool-size)")
                                && w.contains("'distributed-ucxx.rmm.pool-size'")),
                warnings.toString());
    }

    @Test
    void legacyPoolSizeVariable() {
        UcxConfig config = fromEnv(Map.of("DASK_DISTRIBUTED__RMM__POOL_SIZE", "1000.00 MB"));
        assertEquals(Optional.of(1_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        assertEquals(
                "env DASK_DISTRIBUTED__RMM__POOL_SIZE (distributed.rmm.pool-size)", source(config, "memory-pool.size"));
    }

    @Test
    void distributedUcxxPoolSizeVariable() {
        UcxConfig config = fromEnv(Map.of("DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE", "1000.00 MB"));
        assertEquals(Optional.of(1_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        assertTrue(warnings.isEmpty(), warnings.toString());
    }

    @Test
    void poolSizeFromEveryYamlSpelling() {
        for (String yaml : List.of(
                "ucx4j:\n  memory-pool:\n    size: 1000.00 MB\n",
                "ucx4j:\n  memory-pool.size: 1000.00 MB\n",
                "distributed-ucxx:\n  rmm:\n    pool-size: 1000.00 MB\n",
                "distributed:\n  rmm:\n    pool-size: \"1000.00 MB\"\n",
                "distributed:\n  comm:\n    ucx:\n      rmm:\n        pool-size: 1000.00 MB\n")) {
            UcxConfig config = fromFile(yaml(dir, yaml));
            assertEquals(Optional.of(1_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE), yaml);
            assertTrue(source(config, "memory-pool.size").startsWith(dir.resolve("ucx4j.yaml") + ":"), yaml);
        }
    }

    @Test
    void daskCudaVariables() {
        UcxConfig config = fromEnv(Map.of(
                "DASK_UCX__CUDA_COPY",
                "True",
                "DASK_UCX__TCP",
                "True",
                "DASK_UCX__NET_DEVICES",
                "mlx5_0:1",
                "DASK_RMM__POOL_SIZE",
                "1GB"));
        assertEquals(
                Map.of("TLS", "tcp,cuda_copy", "SOCKADDR_TLS_PRIORITY", "tcp", "NET_DEVICES", "mlx5_0:1"),
                config.ucxSettings().contextOptions());
        assertEquals(Optional.of(1_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
    }

    @Test
    void environmentEntriesMergeAcrossSourcesPerEntry() {
        Path file = yaml(dir, """
                ucx4j:
                  environment:
                    log-level: info
                    rndv-thresh: 8192
                    memtype-cache: n
                distributed:
                  comm:
                    ucx:
                      environment:
                        max-rndv-rails: 1
                """);
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder().environment("rndv_thresh", "4096"),
                sources(
                        Map.of("UCX4J__ENVIRONMENT__LOG_LEVEL", "debug", "UCX4J__ENVIRONMENT__MEMTYPE_CACHE", "none"),
                        Map.of(),
                        List.of(file)));
        assertEquals(Map.of("log-level", "debug", "rndv-thresh", "4096", "max-rndv-rails", "1"), config.environment());
        assertEquals("env UCX4J__ENVIRONMENT__LOG_LEVEL", source(config, "environment.log-level"));
        assertEquals("builder", source(config, "environment.rndv-thresh"));
        assertTrue(source(config, "environment.max-rndv-rails")
                .endsWith(":10 (distributed.comm.ucx.environment.max-rndv-rails)"));
        assertEquals(1, warnings.size());
    }

    @Test
    void systemPropertiesSetEveryKind() {
        UcxConfig config = TestConfigSources.fromProps(Map.of(
                "ucx4j.tcp", "true",
                "ucx4j.memory-pool.size", "1GB",
                "ucx4j.memory_pool.maximum_size", "2GiB",
                "ucx4j.environment.some-key", "v",
                "ucx4j.ucx.library", "/opt/ucx/lib/libucp.so",
                "user.home", "/home/x"));
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
        assertEquals(Optional.of(1_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        assertEquals(Optional.of(2L << 30), config.find(ModuleKeysForTests.MEMORY_POOL_MAXIMUM_SIZE));
        assertEquals("v", config.ucxSettings().contextOptions().get("SOME_KEY"));
    }

    @Test
    void explicitConfigFileReplacesTheSearch(@TempDir Path other) {
        Path searched = yaml(dir, "ucx4j:\n  max-frames: 1\n");
        Path explicit = yaml(other, "ucx4j:\n  max-frames: 2\n");
        UcxConfig viaEnv = TestConfigSources.build(
                UcxConfig.builder(), sources(Map.of("UCX4J_CONFIG", explicit.toString()), Map.of(), List.of(searched)));
        assertEquals(2, viaEnv.get(ModuleKeysForTests.MAX_FRAMES));
        UcxConfig viaSearch = TestConfigSources.build(
                UcxConfig.builder(), sources(Map.of(), Map.of(), List.of(dir.resolve("missing.yaml"), searched)));
        assertEquals(1, viaSearch.get(ModuleKeysForTests.MAX_FRAMES));
    }

    @Test
    void builderSetUsesTextSyntax() {
        UcxConfig config = TestConfigSources.from(UcxConfig.builder()
                .set("memory_pool.size", "512MiB")
                .set("connect-timeout", "250ms")
                .set("TCP", "yes"));
        assertEquals(Optional.of(512L << 20), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        assertEquals(Duration.ofMillis(250), config.get(UcxKeys.CONNECT_TIMEOUT));
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
    }
}
