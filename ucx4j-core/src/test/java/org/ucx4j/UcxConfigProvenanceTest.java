package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.TestConfigSources.sources;
import static org.ucx4j.TestConfigSources.yaml;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** entries(), toMap() and toString() report every effective key with its source. */
class UcxConfigProvenanceTest {
    @TempDir
    Path dir;

    @Test
    void everyKeyHasAValueAndASource() {
        Path file = yaml(dir, "# comment\nucx4j:\n  tcp: true\n  environment:\n    log-level: info\n");
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder().set(ModuleKeysForTests.MAX_FRAMES, 10),
                sources(
                        Map.of("UCX4J__MEMORY_POOL__SIZE", "1GB"),
                        Map.of("ucx4j.net-devices", "mlx5_0:1"),
                        List.of(file)));
        Map<String, ConfigEntry> byKey = new LinkedHashMap<>();
        config.entries().forEach(e -> byKey.put(e.key(), e));
        // The core's keys, then each module's (by module name), then the environment entries.
        assertEquals(
                List.of(
                        "tcp",
                        "nvlink",
                        "infiniband",
                        "rdmacm",
                        "cuda-copy",
                        "create-cuda-context",
                        "connect-timeout",
                        "net-devices",
                        "progress-mode",
                        "progress-spin",
                        "peer-error-handling",
                        "multi-buffer",
                        "max-frames",
                        "max-frame-size",
                        "auth.secret",
                        "auth.secret-file",
                        "memory-pool.size",
                        "memory-pool.maximum-size",
                        "environment.log-level"),
                List.copyOf(byKey.keySet()));
        assertEquals(new ConfigEntry("tcp", "true", file + ":3"), byKey.get("tcp"));
        assertEquals(new ConfigEntry("nvlink", "none", "default"), byKey.get("nvlink"));
        assertEquals(
                new ConfigEntry("memory-pool.size", "1 GB (1000000000 bytes)", "env UCX4J__MEMORY_POOL__SIZE"),
                byKey.get("memory-pool.size"));
        assertEquals(new ConfigEntry("net-devices", "mlx5_0:1", "-Ducx4j.net-devices"), byKey.get("net-devices"));
        assertEquals(new ConfigEntry("max-frames", "10", "builder"), byKey.get("max-frames"));
        assertEquals(new ConfigEntry("connect-timeout", "5s", "default"), byKey.get("connect-timeout"));
        assertEquals(new ConfigEntry("progress-mode", "thread-blocking", "default"), byKey.get("progress-mode"));
        assertEquals(new ConfigEntry("progress-spin", "50us", "default"), byKey.get("progress-spin"));
        assertEquals(
                new ConfigEntry("max-frame-size", "64 GiB (68719476736 bytes)", "default"),
                byKey.get("max-frame-size"));
        assertEquals(new ConfigEntry("environment.log-level", "info", file + ":5"), byKey.get("environment.log-level"));
        assertTrue(config.toString().contains("tcp = true  [" + file + ":3]"), config.toString());
    }

    @Test
    @SuppressWarnings("unchecked")
    void jsonFriendlyForm() {
        Path file = yaml(dir, "ucx4j:\n  tcp: true\n  environment:\n    log-level: info\n");
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder()
                        .set(ModuleKeysForTests.MEMORY_POOL_SIZE, 1L << 30)
                        .set(ModuleKeysForTests.AUTH_SECRET, "s3cret"),
                sources(Map.of(), Map.of(), List.of(file)));
        Map<String, Object> map = config.toMap();
        assertEquals(file.toString(), map.get("file"));
        Map<String, Object> keys = (Map<String, Object>) map.get("keys");
        assertEquals(Map.of("value", true, "source", file + ":2"), keys.get("tcp"));
        assertEquals(1L << 30, ((Map<String, Object>) keys.get("memory-pool.size")).get("value"));
        assertEquals("5s", ((Map<String, Object>) keys.get("connect-timeout")).get("value"));
        assertEquals("thread-blocking", ((Map<String, Object>) keys.get("progress-mode")).get("value"));
        assertEquals("(set)", ((Map<String, Object>) keys.get("auth.secret")).get("value"));
        Map<String, Object> nvlink = (Map<String, Object>) keys.get("nvlink");
        assertTrue(nvlink.containsKey("value") && nvlink.get("value") == null);
        Map<String, Object> ucx = (Map<String, Object>) map.get("ucx");
        assertEquals(Map.of("TLS", "tcp", "SOCKADDR_TLS_PRIORITY", "tcp"), ucx.get("context"));
        assertEquals(Map.of("LOG_LEVEL", "info"), ucx.get("global"));
    }
}
