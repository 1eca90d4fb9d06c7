package org.ucx4j.internal.config;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The outside inputs of configuration loading, passed in so that tests never touch the real
 * process environment.
 *
 * <p>Threading: an immutable value (the maps and list are copied).
 *
 * @param environment the process environment variables
 * @param systemProperties the Java system properties
 * @param searchPath the YAML files to try, in order, when neither {@code UCX4J_CONFIG} nor
 *     {@code -Ducx4j.config} names one; the first that exists is read
 * @param yamlSupported whether SnakeYAML Engine can be used (see {@link #yamlLibraryPresent()})
 */
public record ConfigSources(
        Map<String, String> environment,
        Map<String, String> systemProperties,
        List<Path> searchPath,
        boolean yamlSupported) {
    /** The variable naming the one config file to read. */
    public static final String CONFIG_FILE_VARIABLE = "UCX4J_CONFIG";

    /**
     * Copies the inputs.
     *
     * @param environment the environment variables
     * @param systemProperties the system properties
     * @param searchPath the files to try
     * @param yamlSupported whether a YAML file can be read
     */
    public ConfigSources {
        environment = Map.copyOf(environment);
        systemProperties = Map.copyOf(systemProperties);
        searchPath = List.copyOf(searchPath);
    }

    /**
     * Inputs with YAML support as this process has it.
     *
     * @param environment the environment variables
     * @param systemProperties the system properties
     * @param searchPath the files to try
     */
    public ConfigSources(Map<String, String> environment, Map<String, String> systemProperties, List<Path> searchPath) {
        this(environment, systemProperties, searchPath, yamlLibraryPresent());
    }

    /**
     * Whether SnakeYAML Engine, an optional dependency ({@code requires static}), can be used: its classes
     * are there and, on the module path, its module was resolved so that the core reads it.
     *
     * @return true when YAML files can be read
     */
    public static boolean yamlLibraryPresent() {
        try {
            Class<?> settings = Class.forName(
                    "org.snakeyaml.engine.v2.api.LoadSettings", false, ConfigSources.class.getClassLoader());
            Module core = ConfigSources.class.getModule();
            return !core.isNamed() || core.canRead(settings.getModule());
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * The real ones: {@link System#getenv()}, {@link System#getProperties()}, and the search path
     * {@code ./ucx4j.yaml}, {@code ~/.config/ucx4j/ucx4j.yaml}, {@code /etc/ucx4j/ucx4j.yaml}.
     *
     * @return a snapshot taken now
     */
    public static ConfigSources system() {
        Map<String, String> properties = new LinkedHashMap<>();
        Properties system = System.getProperties();
        for (String name : system.stringPropertyNames()) {
            properties.put(name, system.getProperty(name));
        }
        return new ConfigSources(System.getenv(), properties, defaultSearchPath(System.getProperty("user.home")));
    }

    /**
     * The default search path.
     *
     * @param userHome the home directory, or null when unknown
     * @return {@code ./ucx4j.yaml}, {@code <home>/.config/ucx4j/ucx4j.yaml}, {@code /etc/ucx4j/ucx4j.yaml}
     */
    public static List<Path> defaultSearchPath(String userHome) {
        Path cwd = Path.of("ucx4j.yaml").toAbsolutePath();
        Path etc = Path.of("/etc/ucx4j/ucx4j.yaml");
        if (userHome == null || userHome.isBlank()) {
            return List.of(cwd, etc);
        }
        return List.of(cwd, Path.of(userHome, ".config", "ucx4j", "ucx4j.yaml"), etc);
    }

    /**
     * The environment's {@code UCX_*} variables, which win over the config's {@code environment} map.
     *
     * @return the {@code UCX_*} entries
     */
    public Map<String, String> ucxVariables() {
        Map<String, String> ucx = new LinkedHashMap<>();
        environment.forEach((k, v) -> {
            if (k.startsWith("UCX_")) {
                ucx.put(k, v);
            }
        });
        return Map.copyOf(ucx);
    }

    @Override
    public String toString() {
        return "ConfigSources[" + environment.size() + " variables, " + systemProperties.size()
                + " properties, searchPath=" + searchPath + "]";
    }
}
