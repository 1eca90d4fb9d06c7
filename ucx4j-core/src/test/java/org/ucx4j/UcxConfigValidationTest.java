package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.TestConfigSources.from;
import static org.ucx4j.TestConfigSources.fromEnv;
import static org.ucx4j.TestConfigSources.fromFile;
import static org.ucx4j.TestConfigSources.fromProps;
import static org.ucx4j.TestConfigSources.sources;
import static org.ucx4j.TestConfigSources.yaml;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** Every refusal names the key, the value and the source. */
class UcxConfigValidationTest {
    @TempDir
    Path dir;

    private static UcxConfigException fails(Executable load, String... fragments) {
        UcxConfigException e = assertThrows(UcxConfigException.class, load);
        for (String fragment : fragments) {
            assertTrue(e.getMessage().contains(fragment), "'" + fragment + "' not in: " + e.getMessage());
        }
        return e;
    }

    /** An unknown key may be a misspelled secret: its value is neither in the message nor in {@code value()}. */
    private static void valueNotShown(UcxConfigException e, String quotedValue) {
        assertFalse(e.getMessage().contains(quotedValue), e.getMessage());
        assertEquals(Optional.empty(), e.value());
    }

    @Test
    void unknownKeyInUcx4jBlock() {
        Path file = yaml(dir, "ucx4j:\n  tcp: true\n  tpc: true\n");
        UcxConfigException e = fails(() -> fromFile(file), "unknown ucx4j config key 'tpc'", file + ":3");
        valueNotShown(e, "'true'");
        assertEquals(Optional.of("tpc"), e.key());
        assertEquals(Optional.of(file + ":3"), e.source());
    }

    @Test
    void unknownNestedKeyInUcx4jBlock() {
        Path file = yaml(dir, "ucx4j:\n  memory-pool:\n    sise: 1GB\n");
        valueNotShown(fails(() -> fromFile(file), "'memory-pool.sise'", file + ":3"), "'1GB'");
    }

    @Test
    void unknownUcx4jVariable() {
        valueNotShown(fails(() -> fromEnv(Map.of("UCX4J__NVLNK", "true")), "'nvlnk'", "env UCX4J__NVLNK"), "'true'");
    }

    @Test
    void unknownUcx4jProperty() {
        valueNotShown(
                fails(
                        () -> fromProps(Map.of("ucx4j.memory-pool.sizee", "1GB")),
                        "'memory-pool.sizee'",
                        "-Ducx4j.memory-pool.sizee"),
                "'1GB'");
    }

    @Test
    void toolPropertiesAreNotConfigurationKeys() {
        // The command line's own switches live under ucx4j.cli.*: never "unknown key" errors.
        org.junit.jupiter.api.Assertions.assertDoesNotThrow(
                () -> fromProps(Map.of("ucx4j.cli.trace", "true", "ucx4j.ucx.library", "/x/libucp.so")));
    }

    @Test
    void unknownBuilderKey() {
        valueNotShown(fails(() -> UcxConfig.builder().set("tcpp", "true"), "'tcpp'", "builder"), "'true'");
    }

    @Test
    void unrelatedDaskKeysAreIgnored() {
        Path file = yaml(dir, """
                distributed-ucxx:
                  tcp: true
                  some-future-key: 3
                  rmm:
                    pool-size: 1GB
                    log: true
                distributed:
                  scheduler:
                    work-stealing: true
                  comm:
                    timeouts:
                      connect: 30s
                    ucx:
                      reuse-endpoints: true
                  rmm:
                    pool-size: 2GB
                    other: x
                dataframe:
                  shuffle-compression: null
                """);
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder(),
                sources(
                        Map.of(
                                "DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING", "True",
                                "DASK_DISTRIBUTED_UCXX__SOMETHING_NEW", "1",
                                "DASK_UCX__REUSE_ENDPOINTS", "False",
                                "UCX4J_UCX_LIBRARY", "/opt/ucx/lib/libucp.so"),
                        Map.of(),
                        List.of(file)));
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
    }

    @Test
    void wrongTypeFromEnvironment() {
        UcxConfigException e = fails(
                () -> fromEnv(Map.of("UCX4J__TCP", "maybe")), "'maybe'", "'tcp'", "env UCX4J__TCP", "true or false");
        assertEquals(Optional.of("maybe"), e.value());
    }

    @Test
    void wrongTypeInDaskBlockIsStillAnError() {
        Path file = yaml(dir, "distributed:\n  comm:\n    ucx:\n      nvlink: sometimes\n");
        fails(() -> fromFile(file), "'sometimes'", "'nvlink'", file + ":4", "distributed.comm.ucx.nvlink");
    }

    @Test
    void wrongTypeFromDaskVariable() {
        fails(
                () -> fromEnv(Map.of("DASK_DISTRIBUTED__RMM__POOL_SIZE", "lots")),
                "'lots'",
                "'memory-pool.size'",
                "env DASK_DISTRIBUTED__RMM__POOL_SIZE");
    }

    @Test
    void mappingWhereAValueBelongs() {
        Path file = yaml(dir, "ucx4j:\n  tcp:\n    enabled: true\n");
        fails(() -> fromFile(file), "'tcp'", file + ":2", "expected a single value");
    }

    @Test
    void negativeSize() {
        Path file = yaml(dir, "ucx4j:\n  memory-pool:\n    size: -1GB\n");
        fails(() -> fromFile(file), "'-1GB'", "'memory-pool.size'", file + ":3", "negative");
        fails(
                () -> from(UcxConfig.builder().set(ModuleKeysForTests.MEMORY_POOL_SIZE, -5L)),
                "'-5'",
                "'memory-pool.size'",
                "builder",
                "negative");
        fails(
                () -> fromProps(Map.of("ucx4j.max-frame-size", "-1")),
                "'-1'",
                "'max-frame-size'",
                "-Ducx4j.max-frame-size");
    }

    @Test
    void badNumbersAndDurations() {
        fails(
                () -> fromEnv(Map.of("UCX4J__MAX_FRAMES", "0")),
                "'0'",
                "'max-frames'",
                "env UCX4J__MAX_FRAMES",
                "at least 1");
        fails(() -> fromEnv(Map.of("UCX4J__CONNECT_TIMEOUT", "5 parsecs")), "'5 parsecs'", "'connect-timeout'");
        fails(() -> fromEnv(Map.of("UCX4J__CONNECT_TIMEOUT", "none")), "'connect-timeout'", "cannot be unset", "5s");
        fails(() -> fromEnv(Map.of("UCX4J__PROGRESS_MODE", "turbo")), "'turbo'", "'progress-mode'", "thread-blocking");
        fails(() -> fromEnv(Map.of("UCX4J__MEMORY_POOL__SIZE", "1.5")), "'1.5'", "whole");
        fails(() -> fromEnv(Map.of("UCX4J__MEMORY_POOL__SIZE", "1 GX")), "'1 GX'", "unknown size unit");
    }

    @Test
    void rangesAreCheckedAtLoadNamingKeyValueAndSource() {
        // connect-timeout 0 used to load and fail at the first connection.
        UcxConfigException e = fails(
                () -> fromEnv(Map.of("UCX4J__CONNECT_TIMEOUT", "0")),
                "invalid value '0' for ucx4j config key 'connect-timeout' from env UCX4J__CONNECT_TIMEOUT",
                "must be from 1ms to 1d");
        assertEquals(Optional.of("connect-timeout"), e.key());
        assertEquals(Optional.of("env UCX4J__CONNECT_TIMEOUT"), e.source());
        fails(() -> fromProps(Map.of("ucx4j.connect-timeout", "2d")), "'2d'", "-Ducx4j.connect-timeout", "1ms to 1d");
        fails(
                () -> from(UcxConfig.builder().set(UcxKeys.CONNECT_TIMEOUT, java.time.Duration.ZERO)),
                "'0s'",
                "'connect-timeout'",
                "builder",
                "1ms to 1d");
        fails(
                () -> fromEnv(Map.of("DASK_DISTRIBUTED_UCXX__CONNECT_TIMEOUT", "0s")),
                "'connect-timeout'",
                "env DASK_DISTRIBUTED_UCXX__CONNECT_TIMEOUT");
        fails(() -> fromEnv(Map.of("UCX4J__MAX_FRAME_SIZE", "0")), "'0'", "'max-frame-size'", "at least 1 byte");
        assertEquals(
                java.time.Duration.ofMillis(1),
                fromEnv(Map.of("UCX4J__CONNECT_TIMEOUT", "1ms")).get(UcxKeys.CONNECT_TIMEOUT));
    }

    @Test
    void maximumBelowInitialPoolSize() {
        fails(
                () -> fromEnv(Map.of("UCX4J__MEMORY_POOL__SIZE", "2GB", "UCX4J__MEMORY_POOL__MAXIMUM_SIZE", "1GB")),
                "'memory-pool.maximum-size'",
                "env UCX4J__MEMORY_POOL__MAXIMUM_SIZE",
                "env UCX4J__MEMORY_POOL__SIZE");
    }

    @Test
    void yamlSyntaxError() {
        Path file = yaml(dir, "ucx4j:\n  tcp: true\n  nvlink: [true\n");
        UcxConfigException e = fails(() -> fromFile(file), "invalid YAML", file.toString());
        assertTrue(e.source().orElseThrow().startsWith(file + ":"), e.getMessage());
        Path tabs = yaml(dir, "ucx4j:\n\ttcp: true\n");
        fails(() -> fromFile(tabs), "invalid YAML", tabs + ":2");
    }

    @Test
    void topLevelNotAMapping() {
        Path file = yaml(dir, "- a\n- b\n");
        fails(() -> fromFile(file), file + ":1", "mapping");
    }

    @Test
    void ucx4jBlockNotAMapping() {
        Path file = yaml(dir, "ucx4j: true\n");
        fails(() -> fromFile(file), file + ":1", "'ucx4j' must be a mapping");
    }

    @Test
    void environmentMustBeAMapOfValues() {
        Path file = yaml(dir, "ucx4j:\n  environment: log-level=info\n");
        fails(() -> fromFile(file), "'environment'", file + ":2");
        Path nested = yaml(dir, "ucx4j:\n  environment:\n    log:\n      level: info\n");
        fails(() -> fromFile(nested), "'environment.log'", nested + ":3");
        fails(() -> fromEnv(Map.of("UCX4J__ENVIRONMENT", "x")), "'environment'", "env UCX4J__ENVIRONMENT");
        fails(
                () -> fromEnv(Map.of("UCX4J__ENVIRONMENT__BAD$NAME", "x")),
                "'environment.bad$name'",
                "env UCX4J__ENVIRONMENT__BAD$NAME");
    }

    @Test
    void sameKeyTwiceInOneSource() {
        fails(
                () -> fromEnv(Map.of("UCX4J__TCP", "true", "ucx4j__tcp", "false")),
                "'tcp'",
                "set twice",
                "env UCX4J__TCP",
                "env ucx4j__tcp");
        Path file = yaml(dir, "ucx4j:\n  memory-pool.size: 1GB\n  memory-pool:\n    size: 2GB\n");
        fails(() -> fromFile(file), "'memory-pool.size'", "set twice", file + ":2", file + ":4");
    }

    @Test
    void missingExplicitConfigFile() {
        fails(
                () -> TestConfigSources.build(
                        UcxConfig.builder(),
                        sources(Map.of("UCX4J_CONFIG", "/nonexistent/ucx4j.yaml"), Map.of(), List.of())),
                "/nonexistent/ucx4j.yaml",
                "env UCX4J_CONFIG",
                "does not exist");
    }

    @Test
    void secretsAreNeverEchoed() {
        // Every string is a valid secret; check the display paths instead.
        UcxConfig config = from(UcxConfig.builder()
                .set(ModuleKeysForTests.AUTH_SECRET, "hunter2")
                .set(ModuleKeysForTests.AUTH_SECRET_FILE, "/run/secret"));
        assertEquals(Optional.of("hunter2"), config.find(ModuleKeysForTests.AUTH_SECRET));
        assertFalse(config.toString().contains("hunter2"), config.toString());
        assertFalse(config.toMap().toString().contains("hunter2"));
        assertTrue(config.entries().contains(new ConfigEntry("auth.secret", "(set)", "builder")));
        assertTrue(config.entries().contains(new ConfigEntry("auth.secret-file", "/run/secret", "builder")));
        UcxConfigException e = fails(
                () -> from(UcxConfig.builder().set(ModuleKeysForTests.AUTH_SECRET, "   ")),
                "'auth.secret'",
                "builder",
                "(secret)");
        assertEquals(Optional.empty(), e.value());
        assertEquals(Optional.of("auth.secret"), e.key());
    }

    @Test
    void anErrorInALosingSourceIsStillReported() {
        Path file = yaml(dir, "ucx4j:\n  tcp: maybe\n");
        fails(
                () -> TestConfigSources.build(
                        UcxConfig.builder().set(UcxKeys.TCP, true), sources(Map.of(), Map.of(), List.of(file))),
                "'maybe'",
                file + ":2");
    }

    @Test
    void validConfigLoads() {
        assertDoesNotThrow(() -> fromFile(yaml(dir, "ucx4j:\n  environment:\n  memory-pool:\n")));
        assertDoesNotThrow(() -> fromFile(yaml(dir, "")));
    }
}
