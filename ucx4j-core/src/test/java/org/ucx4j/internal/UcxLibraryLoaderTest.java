package org.ucx4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testing.LoaderProbeMain;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;

/**
 * How {@link UcxLibrary} finds and prepares UCX. Loading happens once per JVM, so every case runs in a
 * child JVM ({@link LoaderProbeMain}) with its own properties and environment.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class UcxLibraryLoaderTest {
    private static final Duration CHILD_TIMEOUT = Duration.ofSeconds(60);

    /** A child whose environment carries none of the settings that steer the loader. */
    private static ChildJvm.Spec child() {
        return ChildJvm.of(LoaderProbeMain.class)
                .jvm("-Xmx256m", "-XX:+UseSerialGC")
                .unsetEnv(UcxLibrary.LIBRARY_ENV)
                .unsetEnv("UCX_ERROR_SIGNALS");
    }

    private static String cause(ChildJvm.Result r) {
        String out = r.output();
        int begin = out.indexOf("CAUSE-BEGIN\n");
        int end = out.indexOf("\nCAUSE-END");
        assertTrue(begin >= 0 && end > begin, "child printed no unavailability cause; output:\n" + out);
        return out.substring(begin + "CAUSE-BEGIN\n".length(), end);
    }

    private static void assertInstallInstructions(String message) {
        assertTrue(message.contains("apt-get install -y libucx0"), "no apt-get hint in:\n" + message);
        assertTrue(message.contains("pip install libucx-cu13"), "no pip hint in:\n" + message);
        assertTrue(message.contains("-Ducx4j.ucx.library="), "no -Ducx4j.ucx.library hint in:\n" + message);
        assertTrue(message.contains("UCX4J_UCX_LIBRARY="), "no UCX4J_UCX_LIBRARY hint in:\n" + message);
    }

    @Test
    void explicitPathThatDoesNotExistIsReportedWithInstallInstructions() throws Exception {
        String missing = "/nonexistent/libucp.so";
        ChildJvm.Result r =
                child().jvm("-D" + UcxLibrary.LIBRARY_PROPERTY + "=" + missing).run(CHILD_TIMEOUT);
        assertEquals(0, r.exitCode(), r.output());
        assertEquals("false", r.require("available"), r.output());
        String message = cause(r);
        assertTrue(message.contains(missing), "message does not name " + missing + ":\n" + message);
        assertTrue(message.contains("no such file"), "message does not say 'no such file':\n" + message);
        assertTrue(message.contains("-Ducx4j.ucx.library"), "message does not name the origin:\n" + message);
        assertInstallInstructions(message);
        // An explicit choice is final: nothing else was tried.
        assertFalse(message.contains("system loader"), "fell back after an explicit path:\n" + message);
    }

    @Test
    void explicitDirectoryWithANonLibraryIsNotLoadable(@TempDir Path dir) throws Exception {
        byte[] garbage = new byte[4096];
        new java.util.Random(42).nextBytes(garbage);
        Files.write(dir.resolve("libucp.so"), garbage);
        ChildJvm.Result r = child().env(UcxLibrary.LIBRARY_ENV, dir.toString()).run(CHILD_TIMEOUT);
        assertEquals(0, r.exitCode(), r.output());
        assertEquals("false", r.require("available"), r.output());
        String message = cause(r);
        assertTrue(
                message.contains(dir.resolve("libucp.so").toString()), "message does not name the file:\n" + message);
        assertTrue(message.contains("not loadable"), "message does not say 'not loadable':\n" + message);
        assertTrue(message.contains(UcxLibrary.LIBRARY_ENV), "message does not name the origin:\n" + message);
        assertInstallInstructions(message);
    }

    @Tag("native")
    @Test
    void defaultSearchUsesTheSystemLoaderAndPresetsErrorSignals() throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result r = child().run(CHILD_TIMEOUT);
        assertEquals(0, r.exitCode(), r.output());
        assertEquals("true", r.require("available"), r.output());
        assertEquals("system loader", r.require("origin"), r.output());
        assertVersionAtLeast113(r.require("version"));
        assertTrue(r.require("path").contains("libucp.so"), r.output());
        assertEquals("''", r.require("preset.UCX_ERROR_SIGNALS"), r.output());
        assertEquals("''", r.require("getenv.UCX_ERROR_SIGNALS"), "libc getenv in the child; " + r.output());
    }

    @Tag("native")
    @Test
    void errorSignalsSetByTheUserAreLeftAlone() throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result r = child().env("UCX_ERROR_SIGNALS", "SIGILL").run(CHILD_TIMEOUT);
        assertEquals(0, r.exitCode(), r.output());
        assertEquals("true", r.require("available"), r.output());
        assertEquals("<absent>", r.require("preset.UCX_ERROR_SIGNALS"), r.output());
        assertEquals("'SIGILL'", r.require("getenv.UCX_ERROR_SIGNALS"), r.output());
    }

    @Tag("native")
    @Test
    void explicitPathToTheRealLibraryLoadsIt() throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result first = child().run(CHILD_TIMEOUT);
        String path = first.require("path");
        assertTrue(path.startsWith("/") && Files.isRegularFile(Path.of(path)), "not a file: " + path);

        ChildJvm.Result r =
                child().jvm("-D" + UcxLibrary.LIBRARY_PROPERTY + "=" + path).run(CHILD_TIMEOUT);
        assertEquals(0, r.exitCode(), r.output());
        assertEquals("true", r.require("available"), r.output());
        assertEquals("-D" + UcxLibrary.LIBRARY_PROPERTY, r.require("origin"), r.output());
        assertEquals(path, r.require("path"), r.output());
        assertVersionAtLeast113(r.require("version"));
    }

    @Test
    void withoutNativeAccessTheMessageNamesTheFlag() throws Exception {
        ChildJvm.Result r = child().withoutNativeAccess()
                .jvm("--illegal-native-access=deny")
                .run(CHILD_TIMEOUT);
        assertEquals(0, r.exitCode(), r.output());
        assertEquals("false", r.require("available"), r.output());
        String message = cause(r);
        assertTrue(
                message.contains("--enable-native-access"),
                "message does not name --enable-native-access:\n" + r.output());
    }

    private static void assertVersionAtLeast113(String version) {
        String[] parts = version.split("\\.");
        int major = Integer.parseInt(parts[0]);
        int minor = Integer.parseInt(parts[1]);
        assertTrue(major > 1 || (major == 1 && minor >= 13), "UCX " + version + " is older than 1.13");
    }
}
