package org.ucx4j.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Runs a main class of the test class path in a fresh JVM: for tests of what happens once per JVM
 * (loading UCX), of what could take the JVM down (signals), of a command as a user runs it, and for peers
 * in another process (so connection set-up crosses a process boundary and peer death can be a real
 * {@code kill -9}). The child uses the same {@code java} and class path as this JVM (or a module path:
 * {@link #ofModule}), with {@code --enable-native-access=ALL-UNNAMED} unless
 * {@link Spec#withoutNativeAccess()}.
 *
 * <p>{@link Spec#run} starts the child and waits for it to exit; {@link Spec#start} returns a
 * {@link RunningJvm} whose lines can be awaited.
 *
 * <p>Threading: a {@link Spec} is a builder for one thread; {@link Result} is immutable.
 */
public final class ChildJvm {
    private ChildJvm() {}

    /**
     * Describes a child JVM running {@code main}.
     *
     * @param main the class whose {@code main} the child runs
     * @return a spec to add options to
     */
    public static Spec of(Class<?> main) {
        return new Spec(main.getName(), null);
    }

    /**
     * Describes a child JVM running a module's main class from a module path ({@code java -p PATH -m
     * MODULE/CLASS}), e.g. from built jars, so that the module descriptors are what resolves. Native access
     * is enabled for {@code nativeModules} (unless {@link Spec#withoutNativeAccess()}).
     *
     * @param modulePath the module path (jars and directories, separated by {@code File.pathSeparator})
     * @param moduleAndMain {@code MODULE/CLASS}
     * @param nativeModules the modules to enable native access for, comma-separated, e.g.
     *     {@code org.ucx4j.core,org.ucx4j.cuda}
     * @return a spec to add options to
     */
    public static Spec ofModule(String modulePath, String moduleAndMain, String nativeModules) {
        Spec spec = new Spec(moduleAndMain, modulePath);
        spec.nativeAccessFor = nativeModules;
        return spec;
    }

    /**
     * What a child that exited did.
     *
     * @param exitCode its exit code
     * @param output what it printed on stdout, and on stderr too unless {@link Spec#separateStderr()}
     * @param stderr what it printed on stderr with {@link Spec#separateStderr()}, else empty
     * @param workDir its working directory (null: this JVM's)
     */
    public record Result(int exitCode, String output, String stderr, Path workDir) {
        /**
         * The value after {@code key=} on the first output line that starts with it.
         *
         * @param key the key
         * @return the value, or empty when no line has it
         */
        public Optional<String> value(String key) {
            return output.lines()
                    .filter(l -> l.startsWith(key + "="))
                    .findFirst()
                    .map(l -> l.substring(key.length() + 1));
        }

        /**
         * Like {@link #value} but fails with the whole output when absent.
         *
         * @param key the key
         * @return the value
         */
        public String require(String key) {
            return value(key).orElseThrow(() -> new AssertionError("child did not print " + key + "=; " + all()));
        }

        /**
         * Everything the child left, for assertion messages.
         *
         * @return exit code, output and stderr
         */
        public String all() {
            return "exit " + exitCode + "\noutput:\n" + output + (stderr.isEmpty() ? "" : "\nstderr:\n" + stderr);
        }
    }

    /** A child JVM to start: options, arguments, environment, working directory. */
    public static final class Spec {
        private final String main;
        private final List<String> jvmOptions = new ArrayList<>();
        private final List<String> args = new ArrayList<>();
        private final Map<String, String> env = new LinkedHashMap<>();
        private final List<String> unsetEnv = new ArrayList<>();
        private final List<Predicate<String>> unsetEnvIf = new ArrayList<>();
        private boolean nativeAccess = true;
        private boolean separateStderr;
        private Path workDir;
        private final List<String> defaultSignals = new ArrayList<>();

        private final String modulePath;
        private String nativeAccessFor = "ALL-UNNAMED";

        private Spec(String main, String modulePath) {
            this.main = main;
            this.modulePath = modulePath;
        }

        /**
         * Adds JVM options (before the main class; a later option wins, as {@code java} reads them).
         *
         * @param options e.g. {@code -Xmx256m}
         * @return this
         */
        public Spec jvm(String... options) {
            return jvm(Arrays.asList(options));
        }

        /**
         * Adds JVM options.
         *
         * @param options e.g. {@code List.of("-Xmx256m")}
         * @return this
         */
        public Spec jvm(List<String> options) {
            jvmOptions.addAll(options);
            return this;
        }

        /**
         * Adds program arguments.
         *
         * @param a the arguments after the main class
         * @return this
         */
        public Spec args(String... a) {
            args.addAll(Arrays.asList(a));
            return this;
        }

        /**
         * Sets an environment variable in the child.
         *
         * @param name the variable
         * @param value its value
         * @return this
         */
        public Spec env(String name, String value) {
            env.put(name, value);
            return this;
        }

        /**
         * Sets environment variables in the child.
         *
         * @param variables names and values
         * @return this
         */
        public Spec env(Map<String, String> variables) {
            env.putAll(variables);
            return this;
        }

        /**
         * Removes an environment variable that this JVM would otherwise pass on.
         *
         * @param name the variable
         * @return this
         */
        public Spec unsetEnv(String name) {
            unsetEnv.add(name);
            return this;
        }

        /**
         * Removes every environment variable this JVM would otherwise pass on whose name matches.
         *
         * @param names which names to remove
         * @return this
         */
        public Spec unsetEnv(Predicate<String> names) {
            unsetEnvIf.add(names);
            return this;
        }

        /**
         * Leaves out {@code --enable-native-access}.
         *
         * @return this
         */
        public Spec withoutNativeAccess() {
            nativeAccess = false;
            return this;
        }

        /**
         * Keeps stderr apart from stdout ({@link Result#stderr()}), e.g. to parse stdout as JSON. Only for
         * {@link #run}.
         *
         * @return this
         */
        public Spec separateStderr() {
            separateStderr = true;
            return this;
        }

        /**
         * The child's working directory (where a crash would write {@code hs_err_pid*.log}).
         *
         * @param dir the directory
         * @return this
         */
        public Spec workDir(Path dir) {
            workDir = dir;
            return this;
        }

        /**
         * Starts the child with these signals at their default action (through coreutils' {@code env
         * --default-signal}), so that it handles them even when this JVM was started with them ignored: a
         * background job of a non-interactive shell ignores SIGINT, {@code nohup} SIGHUP, and a JVM that
         * starts with a signal ignored keeps it ignored, as do its children.
         *
         * @param names signal names without {@code SIG}, e.g. {@code INT}
         * @return this
         */
        public Spec defaultSignals(String... names) {
            defaultSignals.addAll(List.of(names));
            return this;
        }

        /**
         * The command line this spec stands for.
         *
         * @return {@code java}, its options, the main class and the arguments (after {@code env} and its
         *     option when {@link #defaultSignals} was given)
         */
        public List<String> command() {
            List<String> cmd = new ArrayList<>();
            if (!defaultSignals.isEmpty()) {
                cmd.add("env"); // execs java: the child's pid is java's
                cmd.add("--default-signal=" + String.join(",", defaultSignals));
            }
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            if (nativeAccess) {
                cmd.add("--enable-native-access=" + nativeAccessFor);
            }
            cmd.addAll(jvmOptions);
            if (modulePath == null) {
                cmd.add("-cp");
                cmd.add(System.getProperty("java.class.path"));
                cmd.add(main);
            } else {
                cmd.add("-p");
                cmd.add(modulePath);
                cmd.add("-m");
                cmd.add(main);
            }
            cmd.addAll(args);
            return cmd;
        }

        private ProcessBuilder builder() {
            ProcessBuilder pb = new ProcessBuilder(command());
            if (workDir != null) {
                pb.directory(workDir.toFile());
            }
            unsetEnv.forEach(pb.environment()::remove);
            unsetEnvIf.forEach(pb.environment().keySet()::removeIf);
            pb.environment().putAll(env);
            return pb;
        }

        /**
         * Starts the child and waits for it; a child still running after {@code timeout} is killed and the
         * test fails.
         *
         * @param timeout how long it may run
         * @return what it did
         * @throws IOException when it cannot be started
         * @throws InterruptedException when interrupted while waiting
         */
        public Result run(Duration timeout) throws IOException, InterruptedException {
            ProcessBuilder pb = builder();
            Path err = null;
            if (separateStderr) {
                err = workDir == null
                        ? Files.createTempFile("stderr", ".txt")
                        : Files.createTempFile(workDir, "stderr", ".txt");
                pb.redirectError(err.toFile());
            } else {
                pb.redirectErrorStream(true);
            }
            Process p = pb.start();
            CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("child " + main + " did not exit within " + timeout + "; output:\n"
                        + out.getNow("(unavailable)") + (err == null ? "" : "\nstderr:\n" + Files.readString(err))
                        + "\ncommand: " + pb.command());
            }
            return new Result(p.exitValue(), out.join(), err == null ? "" : Files.readString(err), workDir);
        }

        /**
         * Starts the child and returns at once (stderr goes with stdout).
         *
         * @return the running child, to await its lines and to kill
         */
        public RunningJvm start() {
            try {
                return new RunningJvm(builder().redirectErrorStream(true).start());
            } catch (IOException e) {
                throw new IllegalStateException("cannot start a child JVM running " + main, e);
            }
        }
    }

    private static String readAll(InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(output unreadable: " + e + ")";
        }
    }
}
