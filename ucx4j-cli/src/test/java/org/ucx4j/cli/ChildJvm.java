package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.ucx4j.Ucx;

/**
 * Runs the {@code ucx4j} command in a child JVM on this test's class path, as a user would (its own
 * children, bench servers, start the same way), and reads numbers and strings from its JSON.
 */
final class ChildJvm {
    private ChildJvm() {}

    /**
     * What a run left.
     *
     * @param exit the exit code
     * @param stdout its standard output
     * @param stderr its standard error
     */
    record Result(int exit, String stdout, String stderr) {
        /** Everything it printed, for assertion messages. */
        String all() {
            return "exit " + exit + "\nstdout:\n" + stdout + "\nstderr:\n" + stderr;
        }
    }

    /** Skips without UCX, or fails when {@code UCX4J_REQUIRE_NATIVE=1} (as in CI). */
    static void assumeUcx() {
        if (!Ucx.isAvailable()) {
            if ("1".equals(System.getenv("UCX4J_REQUIRE_NATIVE"))) {
                fail("UCX4J_REQUIRE_NATIVE=1 but UCX is not available", Ucx.unavailabilityCause());
            }
            Assumptions.abort("UCX is not available: " + Ucx.unavailabilityCause().getMessage());
        }
    }

    /**
     * Runs {@code ucx4j ARGS} in {@code dir}.
     *
     * @param dir the working directory (stderr is kept there too)
     * @param timeoutSeconds how long it may take before it is killed and the test fails
     * @param jvmOptions options for the child JVM (e.g. to start fast)
     * @param args the command line after {@code ucx4j}
     * @return what it printed and its exit code
     */
    static Result run(Path dir, int timeoutSeconds, List<String> jvmOptions, String... args)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of(args));
        Path err = Files.createTempFile(dir, "stderr", ".txt");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("ucx4j " + String.join(" ", args) + " did not finish; stderr: " + Files.readString(err));
        }
        return new Result(p.exitValue(), out, Files.readString(err));
    }

    /**
     * Runs {@code ucx4j bench ARGS --json} (a fast-starting JVM, 50 s at most) and checks that it succeeded.
     *
     * @param dir the working directory
     * @param args the arguments after {@code bench}
     * @return its JSON output
     */
    static String benchJson(Path dir, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bench"));
        cmd.addAll(List.of(args));
        cmd.add("--json");
        Result r = run(dir, 50, List.of("-XX:TieredStopAtLevel=1"), cmd.toArray(String[]::new));
        assertEquals(0, r.exit(), "ucx4j bench " + String.join(" ", args) + " failed: " + r.all());
        return r.stdout();
    }

    /** A number field of a JSON text (the first with that key); fails when missing or null. */
    static double number(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":\\s*([-0-9.eE]+)").matcher(json);
        assertTrue(m.find(), key + " missing or null in " + json);
        return Double.parseDouble(m.group(1));
    }

    /** A string field of a JSON text (the first with that key); fails when missing. */
    static String string(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":\\s*\"([^\"]*)\"").matcher(json);
        assertTrue(m.find(), key + " missing in " + json);
        return m.group(1);
    }
}
