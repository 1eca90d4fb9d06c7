package org.ucx4j;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.ucx4j.internal.config.ConfigSources;

/** Builds configurations from injected sources, never the real environment. */
final class TestConfigSources {
    private TestConfigSources() {}

    static ConfigSources sources(Map<String, String> env, Map<String, String> props, List<Path> searchPath) {
        return new ConfigSources(env, props, searchPath);
    }

    /** Builds with the core's keys and the stand-ins for the comm and cuda keys ({@link ModuleKeysForTests}). */
    static UcxConfig build(UcxConfig.Builder builder, ConfigSources sources) {
        return builder.build(sources, ModuleKeysForTests.ALL_MODULES);
    }

    static UcxConfig fromEnv(Map<String, String> env) {
        return build(UcxConfig.builder(), sources(env, Map.of(), List.of()));
    }

    static UcxConfig fromProps(Map<String, String> props) {
        return build(UcxConfig.builder(), sources(Map.of(), props, List.of()));
    }

    static UcxConfig fromFile(Path file) {
        return build(UcxConfig.builder(), sources(Map.of(), Map.of(), List.of(file)));
    }

    static UcxConfig from(UcxConfig.Builder builder) {
        return build(builder, sources(Map.of(), Map.of(), List.of()));
    }

    static Path yaml(Path dir, String text) {
        try {
            return Files.writeString(dir.resolve("ucx4j.yaml"), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
