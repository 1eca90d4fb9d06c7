package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.TestConfigSources.sources;
import static org.ucx4j.TestConfigSources.yaml;

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.internal.config.ConfigSources;
import org.ucx4j.spi.ConfigKeySet;

/** Keys registered per module: read from every source, listed, and what happens when a module is absent. */
class ConfigModuleKeysTest {
    @TempDir
    Path dir;

    @RegisterExtension
    final RecordedConfigWarnings recorded = new RecordedConfigWarnings();

    private final List<String> warnings = recorded.messages();

    private static UcxConfig coreOnly(UcxConfig.Builder builder, ConfigSources sources) {
        return builder.build(sources, ModuleKeysForTests.CORE_ONLY);
    }

    @Test
    void aModulesKeysAreReadFromEverySourceAndListed() {
        Path file = yaml(dir, "ucx4j:\n  memory-pool:\n    size: 1GB\n");
        UcxConfig config = TestConfigSources.build(
                UcxConfig.builder().set(ModuleKeysForTests.MULTI_BUFFER, true),
                sources(Map.of("UCX4J__MAX_FRAMES", "7"), Map.of("ucx4j.max-frame-size", "1MiB"), List.of(file)));
        assertEquals(Boolean.TRUE, config.get(ModuleKeysForTests.MULTI_BUFFER));
        assertEquals(7, config.get(ModuleKeysForTests.MAX_FRAMES));
        assertEquals("env UCX4J__MAX_FRAMES", config.source(ModuleKeysForTests.MAX_FRAMES));
        assertEquals(1L << 20, config.get(ModuleKeysForTests.MAX_FRAME_SIZE));
        assertEquals(Optional.of(1_000_000_000L), config.find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        assertEquals(file + ":3", config.source(ModuleKeysForTests.MEMORY_POOL_SIZE));
        assertTrue(config.keys().contains(ModuleKeysForTests.MAX_FRAMES));
        assertTrue(config.entries().contains(new ConfigEntry("max-frames", "7", "env UCX4J__MAX_FRAMES")));
    }

    @Test
    void keysOfAModuleNotOnThePathAreIgnoredWithAWarning() {
        Path file = yaml(dir, "ucx4j:\n  tcp: true\n  memory-pool:\n    size: 1GB\n  auth:\n    secret: x\n");
        UcxConfig config = coreOnly(
                UcxConfig.builder().set("max-frame-size", "1MiB"),
                sources(Map.of("UCX4J__MAX_FRAMES", "7"), Map.of("ucx4j.multi-buffer", "true"), List.of(file)));
        assertEquals(Optional.of(true), config.find(UcxKeys.TCP));
        assertTrue(config.entries().stream().noneMatch(e -> e.key().equals("max-frames")), config.toString());
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> config.get(ModuleKeysForTests.MAX_FRAMES));
        assertTrue(e.getMessage().contains("'max-frames' is not registered"), e.getMessage());
        for (String expected : List.of(
                "'max-frames' from env UCX4J__MAX_FRAMES belongs to ucx4j-comm",
                "'multi-buffer' from -Ducx4j.multi-buffer belongs to ucx4j-comm",
                "'max-frame-size' from builder belongs to ucx4j-comm",
                "'memory-pool' from " + file + ":3 belongs to ucx4j-cuda",
                "'auth' from " + file + ":5 belongs to ucx4j-comm")) {
            assertTrue(warnings.stream().anyMatch(w -> w.contains(expected)), expected + " not in " + warnings);
        }
    }

    @Test
    void aMisspeltKeyIsStillAnErrorWhateverModulesArePresent() {
        assertThrows(
                UcxConfigException.class,
                () -> coreOnly(UcxConfig.builder(), sources(Map.of("UCX4J__MAX_FRAMEZ", "7"), Map.of(), List.of())));
        UcxConfigException e = assertThrows(
                UcxConfigException.class, () -> TestConfigSources.fromEnv(Map.of("UCX4J__AUTH__SECRETT", "x")));
        assertTrue(e.getMessage().contains("unknown ucx4j config key 'auth.secrett'"), e.getMessage());
    }

    @Test
    void daskSpellingsOfAModulesKeysFollowTheModule() {
        Map<String, String> env = Map.of("DASK_DISTRIBUTED_UCXX__RMM__POOL_SIZE", "1GB", "DASK_RMM__POOL_SIZE", "2GB");
        assertEquals(
                Optional.of(1_000_000_000L), TestConfigSources.fromEnv(env).find(ModuleKeysForTests.MEMORY_POOL_SIZE));
        UcxConfig without = coreOnly(UcxConfig.builder(), sources(env, Map.of(), List.of()));
        assertTrue(without.entries().stream().noneMatch(e -> e.key().startsWith("memory-pool")));
        assertTrue(warnings.isEmpty(), "Dask's blocks hold keys of many programs: " + warnings);
    }

    @Test
    void twoModulesCannotDeclareOneName() {
        ConfigKeySet other =
                ModuleKeysForTests.set("ucx4j-other", List.of(ConfigKey.count("max-frames", 1, "the same name again")));
        IllegalStateException e = assertThrows(
                IllegalStateException.class, () -> ConfigRegistry.of(List.of(ModuleKeysForTests.COMM, other)));
        assertTrue(
                e.getMessage().contains("'max-frames' is declared by both ucx4j-comm and ucx4j-other"), e.getMessage());
        IllegalStateException unlisted = assertThrows(
                IllegalStateException.class,
                () -> ConfigRegistry.of(List.of(ModuleKeysForTests.set(
                        "ucx4j-comm", List.of(ConfigKey.flag("new-comm-switch", "not listed"))))));
        assertTrue(
                unlisted.getMessage().contains("'new-comm-switch' of ucx4j-comm is not listed"), unlisted.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ConfigKey.flag("Bad_Name", "x"));
        assertThrows(IllegalArgumentException.class, () -> ConfigKey.flag("environment.x", "x"));
    }

    @Test
    void aKeyOfAnUnregisteredModuleCannotBeSetInCode() {
        ConfigKey<Boolean> stray = ConfigKey.flag("stray", "registered by nobody");
        UcxConfigException e = assertThrows(
                UcxConfigException.class,
                () -> TestConfigSources.from(UcxConfig.builder().set(stray, true)));
        assertTrue(e.getMessage().contains("unknown ucx4j config key 'stray'"), e.getMessage());
    }

    @Test
    void theDiscoveredRegistryHasTheCoreKeysFirst() {
        assertEquals(UcxKeys.ALL, ConfigRegistry.discovered().keys().subList(0, UcxKeys.ALL.size()));
    }

    @Test
    void withoutYamlSupportAFileThatExistsIsAClearError() {
        Path file = yaml(dir, "ucx4j:\n  tcp: true\n");
        UcxConfigException e = assertThrows(
                UcxConfigException.class,
                () -> TestConfigSources.build(
                        UcxConfig.builder(), new ConfigSources(Map.of(), Map.of(), List.of(file), false)));
        assertTrue(e.getMessage().contains("ucx4j config file " + file + " cannot be read"), e.getMessage());
        assertTrue(e.getMessage().contains("SnakeYAML Engine (org.snakeyaml:snakeyaml-engine)"), e.getMessage());
        assertEquals(Optional.of(file.toString()), e.source());
        UcxConfig noFile = TestConfigSources.build(
                UcxConfig.builder(),
                new ConfigSources(Map.of("UCX4J__TCP", "true"), Map.of(), List.of(dir.resolve("absent.yaml")), false));
        assertEquals(Optional.of(true), noFile.find(UcxKeys.TCP));
        assertFalse(noFile.configFile().isPresent());
    }

    @Test
    void yamlSupportIsDetected() {
        assertTrue(ConfigSources.yamlLibraryPresent(), "snakeyaml-engine is on the test class path");
    }

    /** The core in a class loader without SnakeYAML: detection, the error, and loading without a file. */
    @Test
    void withoutTheYamlLibraryOnThePath() throws Exception {
        Path file = yaml(dir, "ucx4j:\n  tcp: true\n");
        URL[] withoutYaml = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(entry -> !entry.contains("snakeyaml"))
                .map(ConfigModuleKeysTest::url)
                .toArray(URL[]::new);
        try (URLClassLoader loader = new URLClassLoader(withoutYaml, ClassLoader.getPlatformClassLoader())) {
            Class<?> sources = Class.forName(ConfigSources.class.getName(), true, loader);
            assertEquals(false, sources.getMethod("yamlLibraryPresent").invoke(null));
            Class<?> config = Class.forName(UcxConfig.class.getName(), true, loader);
            Object builder = config.getMethod("builder").invoke(null);
            Method build = builder.getClass().getDeclaredMethod("build", sources);
            build.setAccessible(true);
            Object withFile = sources.getConstructor(Map.class, Map.class, List.class)
                    .newInstance(Map.of(), Map.of(), List.of(file));
            InvocationTargetException e =
                    assertThrows(InvocationTargetException.class, () -> build.invoke(builder, withFile));
            assertEquals(
                    UcxConfigException.class.getName(),
                    e.getCause().getClass().getName(),
                    e.getCause().toString());
            assertTrue(
                    e.getCause().getMessage().contains("needs SnakeYAML Engine"),
                    e.getCause().getMessage());
            Object noFile = sources.getConstructor(Map.class, Map.class, List.class)
                    .newInstance(Map.of("UCX4J__TCP", "true"), Map.of(), List.of(dir.resolve("absent.yaml")));
            assertTrue(build.invoke(builder, noFile).toString().contains("tcp = true  [env UCX4J__TCP]"));
        }
    }

    private static URL url(String classPathEntry) {
        try {
            return Path.of(classPathEntry).toUri().toURL();
        } catch (MalformedURLException e) {
            throw new IllegalArgumentException(classPathEntry, e);
        }
    }
}
