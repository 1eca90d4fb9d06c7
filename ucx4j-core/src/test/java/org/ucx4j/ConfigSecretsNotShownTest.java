package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.ucx4j.TestConfigSources.fromEnv;
import static org.ucx4j.TestConfigSources.fromFile;
import static org.ucx4j.TestConfigSources.fromProps;
import static org.ucx4j.TestConfigSources.yaml;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * A refused configuration never shows a secret: not in the message, not in {@link UcxConfigException#value()},
 * not in a chained cause or its stack trace. The secret here is {@value #SECRET}; each case is a mistake a
 * user makes next to it (a YAML syntax error on or after the secret's line, a misspelled key, a value given
 * to the {@code auth} group, the key given twice). An invalid secret from the builder is
 * {@code UcxConfigValidationTest#secretsAreNeverEchoed}.
 */
class ConfigSecretsNotShownTest {
    private static final String SECRET = "hunter2-0xs3cr3t";

    @TempDir
    Path dir;

    /** Everything a caller could print about the failure: message, value, and every cause with its trace. */
    private static UcxConfigException refusedWithoutSecret(Executable load, String... fragments) {
        UcxConfigException e = assertThrows(UcxConfigException.class, load);
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        String everything = e.getMessage() + "\n" + e.value().orElse("") + "\n" + trace;
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            everything += "\n" + c;
        }
        assertFalse(everything.contains("hunter2"), "the secret is shown:\n" + everything);
        assertFalse(everything.contains("s3cr3t"), "part of the secret is shown:\n" + everything);
        for (String fragment : fragments) {
            assertTrue(e.getMessage().contains(fragment), "'" + fragment + "' not in: " + e.getMessage());
        }
        return e;
    }

    @Test
    void unterminatedQuotedSecret() {
        Path file = yaml(dir, "ucx4j:\n  auth:\n    secret: \"" + SECRET + "\n  tcp: true\n");
        UcxConfigException e = refusedWithoutSecret(
                () -> fromFile(file),
                "invalid YAML in ucx4j config file " + file + ":5:1",
                "quoted scalar (from line 3, column 13)");
        assertNull(e.getCause(), "SnakeYAML's exception quotes the file; it must not be chained");
        assertEquals(Optional.empty(), e.key());
    }

    @Test
    void badIndentationAfterTheSecretLine() {
        Path file = yaml(dir, "ucx4j:\n  auth:\n    secret: " + SECRET + "\n   tcp: true\n");
        UcxConfigException e = refusedWithoutSecret(() -> fromFile(file), file + ":4:");
        assertNull(e.getCause());
    }

    @Test
    void unknownEscapeInTheSecretShowsNoCharacterOfIt() {
        // SnakeYAML names the character after the backslash: 'x' followed by the secret's own characters.
        Path file = yaml(dir, "ucx4j:\n  auth:\n    secret: \"hunter2\\q0xs3cr3t\"\n");
        UcxConfigException e =
                refusedWithoutSecret(() -> fromFile(file), file + ":3:", "found unknown escape character");
        assertFalse(e.getMessage().contains("q(113)"), e.getMessage());
    }

    @Test
    void secretLineWithTabAfterIt() {
        Path file = yaml(dir, "ucx4j:\n  auth:\n    secret: '" + SECRET + "'\t# x\n\t tcp: true\n");
        refusedWithoutSecret(() -> fromFile(file), file + ":");
    }

    @Test
    void misspelledSecretInAnEnvironmentVariable() {
        UcxConfigException e = refusedWithoutSecret(
                () -> fromEnv(Map.of("UCX4J__AUTH__SECRTE", SECRET)),
                "unknown ucx4j config key 'auth.secrte'",
                "env UCX4J__AUTH__SECRTE");
        assertEquals(Optional.of("auth.secrte"), e.key());
        assertEquals(Optional.empty(), e.value());
    }

    @Test
    void misspelledSecretInASystemProperty() {
        refusedWithoutSecret(
                () -> fromProps(Map.of("ucx4j.auth.secrte", SECRET)),
                "unknown ucx4j config key 'auth.secrte'",
                "-Ducx4j.auth.secrte");
    }

    @Test
    void misspelledSecretInTheFile() {
        Path file = yaml(dir, "ucx4j:\n  auth:\n    secrte: " + SECRET + "\n");
        refusedWithoutSecret(() -> fromFile(file), "unknown ucx4j config key 'auth.secrte'", file + ":3");
    }

    @Test
    void secretGivenToTheGroup() {
        refusedWithoutSecret(() -> fromEnv(Map.of("UCX4J__AUTH", SECRET)), "'auth'", "env UCX4J__AUTH", "group");
        Path file = yaml(dir, "ucx4j:\n  auth: " + SECRET + "\n");
        refusedWithoutSecret(() -> fromFile(file), "'auth'", file + ":2");
    }

    @Test
    void secretSetTwiceInOneSource() {
        Map<String, String> env = new TreeMap<>(Map.of("UCX4J__AUTH__SECRET", SECRET, "ucx4j__auth__secret", SECRET));
        UcxConfigException e = refusedWithoutSecret(() -> fromEnv(env), "'auth.secret'", "set twice");
        assertEquals(Optional.empty(), e.value());
    }

    @Test
    void theLoadedConfigurationMasksTheSecret() {
        UcxConfig config = fromEnv(Map.of("UCX4J__AUTH__SECRET", SECRET));
        assertEquals(Optional.of(SECRET), config.find(ModuleKeysForTests.AUTH_SECRET));
        String shown = config + "\n" + config.toMap() + "\n" + config.entries();
        assertFalse(shown.contains("hunter2"), shown);
        assertTrue(config.entries().contains(new ConfigEntry("auth.secret", "(set)", "env UCX4J__AUTH__SECRET")));
    }
}
