package org.ucx4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.ucx4j.testsupport.ChildJvm;

/**
 * Runs the {@code ucx4j} command in a child JVM on this test's class path, as a user would (its own
 * children, bench servers, start the same way), and reads its {@code --json} output with Jackson.
 */
final class CliProcess {
    /** Strict about the end: stdout must be one JSON document, with nothing (a UCX log line, say) after it. */
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private CliProcess() {}

    /**
     * {@code ucx4j ARGS} in {@code dir}, not yet started: add environment or options, then
     * {@link ChildJvm.Spec#run}. Stderr is kept apart from stdout.
     *
     * @param dir the working directory (stderr is kept there too)
     * @param args the command line after {@code ucx4j}
     * @return the child to run
     */
    static ChildJvm.Spec command(Path dir, String... args) {
        return ChildJvm.of(Main.class).workDir(dir).separateStderr().args(args);
    }

    /**
     * Runs {@code ucx4j ARGS} in {@code dir}.
     *
     * @param dir the working directory
     * @param timeout how long it may take before it is killed and the test fails
     * @param jvmOptions options for the child JVM (e.g. to start fast)
     * @param args the command line after {@code ucx4j}
     * @return what it printed and its exit code
     */
    static ChildJvm.Result run(Path dir, Duration timeout, List<String> jvmOptions, String... args)
            throws IOException, InterruptedException {
        return command(dir, args).jvm(jvmOptions).run(timeout);
    }

    /**
     * Runs {@code ucx4j bench ARGS --json} (a fast-starting JVM, 50 s at most) and checks that it succeeded.
     *
     * @param dir the working directory
     * @param args the arguments after {@code bench}
     * @return its JSON output
     */
    static JsonNode benchJson(Path dir, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bench"));
        cmd.addAll(List.of(args));
        cmd.add("--json");
        ChildJvm.Result r =
                run(dir, Duration.ofSeconds(50), List.of("-XX:TieredStopAtLevel=1"), cmd.toArray(String[]::new));
        assertEquals(0, r.exitCode(), "ucx4j bench " + String.join(" ", args) + " failed: " + r.all());
        return json(r.output());
    }

    /**
     * Parses a JSON text that must be one JSON document and nothing else.
     *
     * @param text the text
     * @return its tree
     */
    static JsonNode json(String text) {
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new AssertionError("not JSON: " + text, e);
        }
    }

    /** A number field (the first with that key, at any depth); fails when missing, null or not a number. */
    static double number(JsonNode json, String key) {
        JsonNode v = json.findValue(key);
        assertTrue(v != null && v.isNumber(), key + " missing, null or not a number in " + json);
        return v.doubleValue();
    }

    /** A string field (the first with that key, at any depth); fails when missing or not a string. */
    static String string(JsonNode json, String key) {
        JsonNode v = json.findValue(key);
        assertTrue(v != null && v.isTextual(), key + " missing or not a string in " + json);
        return v.textValue();
    }

    /** Fails unless the first field with that key (at any depth) is present and null. */
    static void assertNullField(JsonNode json, String key) {
        JsonNode v = json.findValue(key);
        assertNotNull(v, key + " missing in " + json);
        assertTrue(v.isNull(), key + " should be null in " + json);
    }
}
