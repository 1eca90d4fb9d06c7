package org.ucx4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.testing.SignalChildMain;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;

/**
 * The JVM takes SIGSEGV for its own purposes (implicit null checks, stack guard pages, safepoint polls);
 * UCX's default error-signal handlers would turn each of those into a crash. ucx4j sets
 * {@code UCX_ERROR_SIGNALS} to empty before libucs loads. This test makes a child JVM with UCX loaded and
 * a live loopback connection take 100,000 null-pointer SIGSEGVs and 20 stack overflows, then talk over
 * UCX again.
 *
 * <p>Why a compiler directive: C2 turns a null check that has failed before into an explicit compare, so
 * under default tiering only the first couple of thousand NPEs of the loop go through SIGSEGV. Keeping
 * the loop method at C1 (its implicit null checks always fault) makes every one of the 100,000 a real
 * signal; measured with {@code strace -e signal=SIGSEGV}: 100,020 signals with the directive, 2,120
 * without.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("native")
class SignalSafetyTest {
    private static final String UCX_DEFAULT_ERROR_SIGNALS = "SIGILL,SIGSEGV,SIGBUS,SIGFPE";

    private static ChildJvm.Spec signalChild(Path dir) throws IOException {
        Path directives = dir.resolve("c1-only-npe-loop.json");
        Files.writeString(
                directives, "[{ match: \"org/ucx4j/testing/SignalChildMain.npeRound\", c2: { Exclude: true } }]\n");
        return ChildJvm.of(SignalChildMain.class)
                .workDir(dir)
                .jvm("-Xmx256m", "-XX:+UseSerialGC")
                .jvm(
                        "-XX:+UnlockDiagnosticVMOptions",
                        "-XX:CompilerDirectivesFile=" + directives,
                        "-XX:ErrorFile=" + dir.resolve("hs_err_pid%p.log"),
                        "-Xss1m")
                .unsetEnv(org.ucx4j.internal.UcxLibrary.LIBRARY_ENV)
                .unsetEnv("UCX_ERROR_SIGNALS");
    }

    private static List<Path> crashReports(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().startsWith("hs_err"))
                    .toList();
        }
    }

    @Test
    void jvmSignalsWithUcxLoadedDoNotCrash(@TempDir Path dir) throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result r = signalChild(dir).run(Duration.ofSeconds(150));
        String out = r.output();
        assertEquals(List.of(), crashReports(dir), "the child JVM crashed; output:\n" + out);
        assertEquals(0, r.exitCode(), out);
        assertTrue(out.contains("UCX_ERROR_SIGNALS=''"), "ucx4j did not preset UCX_ERROR_SIGNALS:\n" + out);
        assertTrue(out.contains("NPE caught=100000"), out);
        assertTrue(out.contains("SOE caught=20"), out);
        assertTrue(out.contains("TAG_OK"), out);
        assertTrue(out.lines().anyMatch("SURVIVED"::equals), out);
    }

    /**
     * With the user's own {@code UCX_ERROR_SIGNALS} (here UCX's default list) ucx4j must leave it alone.
     * Whether the JVM then survives is only reported: it tells whether the preset matters on the
     * installed UCX (on UCX 1.13.1 the child dies on its first implicit null check).
     */
    @Test
    void userErrorSignalsAreKeptAndTheOutcomeIsReported(@TempDir Path dir) throws Exception {
        Requirements.assumeUcx();
        ChildJvm.Result r;
        try {
            r = signalChild(dir)
                    .env("UCX_ERROR_SIGNALS", UCX_DEFAULT_ERROR_SIGNALS)
                    .run(Duration.ofSeconds(60));
        } catch (AssertionError hung) {
            System.out.println("[signal report] with UCX_ERROR_SIGNALS=" + UCX_DEFAULT_ERROR_SIGNALS
                    + " the child JVM hung: " + hung.getMessage());
            return;
        }
        String out = r.output();
        assertTrue(
                out.contains("UCX_ERROR_SIGNALS='" + UCX_DEFAULT_ERROR_SIGNALS + "'"),
                "the user's UCX_ERROR_SIGNALS did not reach libc getenv unchanged:\n" + out);
        assertTrue(out.contains("preset={}"), "ucx4j preset UCX_ERROR_SIGNALS over the user's value:\n" + out);
        boolean survived = r.exitCode() == 0 && out.lines().anyMatch("SURVIVED"::equals);
        System.out.println("[signal report] with UCX_ERROR_SIGNALS=" + UCX_DEFAULT_ERROR_SIGNALS + " the child JVM "
                + (survived
                        ? "SURVIVED"
                        : "CRASHED (exit " + r.exitCode() + ", hs_err files " + crashReports(dir) + ")")
                + "; output:\n" + out);
    }
}
