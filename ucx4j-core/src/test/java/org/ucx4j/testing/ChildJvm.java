package org.ucx4j.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs a main class from the test class path in a fresh JVM and collects what it printed (stdout and
 * stderr together). For tests of things that happen once per JVM (loading UCX) or that could take the
 * JVM down (signals). The child uses the same {@code java} as this JVM.
 */
public final class ChildJvm {
    private ChildJvm() {}

    /** What the child did. */
    public record Result(int exitCode, String output, Path workDir) {
        /** The value after {@code key=} on the first line that starts with it. */
        public Optional<String> value(String key) {
            return output.lines().filter(l -> l.startsWith(key + "=")).findFirst()
                    .map(l -> l.substring(key.length() + 1));
        }

        /** Like {@link #value} but fails with the whole output when absent. */
        public String require(String key) {
            return value(key).orElseThrow(() -> new AssertionError(
                    "child did not print " + key + "= (exit " + exitCode + "); output:\n" + output));
        }
    }

    /** A child JVM to start. */
    public static final class Spec {
        private final Class<?> main;
        private final List<String> jvmOptions = new ArrayList<>();
        private final List<String> args = new ArrayList<>();
        private final Map<String, String> env = new java.util.LinkedHashMap<>();
        private final List<String> unsetEnv = new ArrayList<>();
        private boolean nativeAccess = true;
        private Path workDir;

        private Spec(Class<?> main) {
            this.main = main;
        }

        /** Adds JVM options (before the main class). */
        public Spec jvm(String... options) {
            jvmOptions.addAll(Arrays.asList(options));
            return this;
        }

        /** Adds program arguments. */
        public Spec args(String... a) {
            args.addAll(Arrays.asList(a));
            return this;
        }

        /** Sets an environment variable in the child. */
        public Spec env(String name, String value) {
            env.put(name, value);
            return this;
        }

        /** Removes an environment variable that this JVM would otherwise pass on. */
        public Spec unsetEnv(String name) {
            unsetEnv.add(name);
            return this;
        }

        /** Leaves out {@code --enable-native-access=ALL-UNNAMED}. */
        public Spec withoutNativeAccess() {
            nativeAccess = false;
            return this;
        }

        /** The child's working directory (where a crash would write {@code hs_err_pid*.log}). */
        public Spec workDir(Path dir) {
            workDir = dir;
            return this;
        }

        /** Starts the child and waits for it; a child still running after {@code timeout} is killed. */
        public Result run(Duration timeout) throws IOException, InterruptedException {
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElseThrow());
            if (nativeAccess) {
                cmd.add("--enable-native-access=ALL-UNNAMED");
            }
            cmd.add("-Xmx256m");
            cmd.add("-XX:+UseSerialGC");
            cmd.addAll(jvmOptions);
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(main.getName());
            cmd.addAll(args);
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            if (workDir != null) {
                pb.directory(workDir.toFile());
            }
            unsetEnv.forEach(pb.environment()::remove);
            pb.environment().putAll(env);
            Process p = pb.start();
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("child " + main.getSimpleName() + " did not exit within " + timeout
                        + "; output:\n" + out.getNow("(unavailable)") + "\ncommand: " + cmd);
            }
            return new Result(p.exitValue(), out.join(), workDir);
        }
    }

    /** Describes a child JVM running {@code main}. */
    public static Spec of(Class<?> main) {
        return new Spec(main);
    }

    private static String readAll(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(output unreadable: " + e + ")";
        }
    }
}
