package org.ucx4j.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * Starts the benchmark server as a child JVM: the same {@code java}, the same module path (or class
 * path), native access for the core module, and this JVM's {@code ucx4j.*} system properties; the
 * environment ({@code UCX_*} included) is inherited. Waits for its {@code PORT <n>} line; its other
 * output goes to stderr with a prefix.
 *
 * <p>Ownership: the caller closes it, which waits for the child to exit (and kills it if it does not).
 */
final class PeerLauncher implements AutoCloseable {
    static final String MAIN_MODULE = "org.ucx4j.cli";
    private static final String CORE_MODULE = "org.ucx4j.core,org.ucx4j.cuda";

    private final Process process;
    private final CompletableFuture<Integer> port = new CompletableFuture<>();

    private PeerLauncher(Process process) {
        this.process = process;
        Thread.ofPlatform()
                .daemon(true)
                .name("ucx4j-peer-" + process.pid() + "-out")
                .start(this::pump);
        process.onExit()
                .thenRun(() -> port.completeExceptionally(new IllegalStateException("the bench server (pid "
                        + process.pid() + ") exited with code " + process.exitValue() + " before printing its port")));
    }

    /**
     * Starts the child.
     *
     * @param serverArgs arguments after {@code bench} (e.g. {@code --server --port 0 ...})
     * @return the running child
     */
    static PeerLauncher start(List<String> serverArgs) {
        List<String> cmd = command(serverArgs);
        try {
            return new PeerLauncher(new ProcessBuilder(cmd)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start());
        } catch (IOException e) {
            throw new IllegalStateException("cannot start the bench server JVM: " + String.join(" ", cmd), e);
        }
    }

    /** The child's command line, recomputed from this JVM. */
    static List<String> command(List<String> serverArgs) {
        List<String> cmd = cliCommand();
        // The server is the benchmark's other end: it runs with this JVM's heap and processor settings.
        cmd.addAll(
                1,
                forwardedJvmOptions(
                        List.of(ProcessHandle.current().info().arguments().orElse(new String[0]))));
        cmd.add("bench");
        cmd.addAll(serverArgs);
        cmd.addAll(BenchMemory.current().peerArgs());
        return cmd;
    }

    /**
     * The JVM options of this JVM's command line that say how its heap, garbage collector and processor
     * count are set up (heap sizes, {@code -XX:+AlwaysPreTouch}, the RAM-based heap defaults, the collector,
     * large pages, compressed pointers, {@code -XX:ActiveProcessorCount}): the bench server runs with the
     * same, so that both ends of a two-process benchmark are configured alike. A JVM on a machine with much
     * memory otherwise sizes its heap from the machine (a quarter of it), and a benchmark that pins its heap
     * ({@code -Xms} = {@code -Xmx}, pre-touched) would pin it on one side only. Other options (agents,
     * flight recordings, logging to files) are not forwarded: two processes would share their outputs.
     * Options in {@code JAVA_TOOL_OPTIONS} reach the child through the environment anyway.
     *
     * @param args this JVM's arguments, as {@link ProcessHandle.Info#arguments()} gives them
     * @return the options to repeat, in order; scanning stops at the main module, class or jar
     */
    static List<String> forwardedJvmOptions(List<String> args) {
        List<String> out = new ArrayList<>();
        boolean valueNext = false;
        for (String a : args) {
            if (valueNext) {
                valueNext = false;
                continue;
            }
            if (a.equals("-m") || a.equals("--module") || a.equals("-jar") || !a.startsWith("-")) {
                break; // the main module, jar or class: what follows is the program's
            }
            if (OPTIONS_WITH_VALUE.contains(a)) {
                valueNext = true;
            } else if (FORWARDED.matcher(a).matches()) {
                out.add(a);
            }
        }
        return out;
    }

    /** JVM options whose value is the next argument (so that the value is not taken for the main class). */
    private static final Set<String> OPTIONS_WITH_VALUE = Set.of(
            "-p",
            "--module-path",
            "-cp",
            "-classpath",
            "--class-path",
            "--add-modules",
            "--add-opens",
            "--add-exports",
            "--add-reads",
            "--limit-modules",
            "--upgrade-module-path",
            "--patch-module");

    /** What {@link #forwardedJvmOptions} repeats. */
    private static final Pattern FORWARDED = Pattern.compile("-Xm[sxn]\\S+|-Xss\\S+"
            + "|-XX:[+-](AlwaysPreTouch|UseLargePages|UseTransparentHugePages|UseCompressedOops"
            + "|UseCompactObjectHeaders|UseNUMA|Use\\w+GC)"
            + "|-XX:(MaxRAM|MaxRAMPercentage|InitialRAMPercentage|MinRAMPercentage|ActiveProcessorCount"
            + "|MaxHeapSize|InitialHeapSize|NewSize|MaxNewSize)=\\S+");

    /**
     * The command that runs {@code ucx4j} as this JVM runs it (the same {@code java}, module or class path,
     * native access, {@code ucx4j.*} properties), without arguments: for the bench server and for
     * {@code ucx4j launch -- ucx4j ...}. Not the heap options: a launcher's heap is no measure of what
     * each of the processes it launches may take (a pre-touched heap per GPU could exhaust the machine).
     *
     * @return a mutable list to append the arguments to
     */
    static List<String> cliCommand() {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java"));
        String modulePath = System.getProperty("jdk.module.path");
        boolean onModulePath = modulePath != null
                && !modulePath.isEmpty()
                && PeerLauncher.class.getModule().isNamed();
        cmd.add("--enable-native-access=" + (onModulePath ? CORE_MODULE : "ALL-UNNAMED"));
        for (Map.Entry<Object, Object> e : System.getProperties().entrySet()) {
            String key = String.valueOf(e.getKey());
            if (key.startsWith("ucx4j.") || key.startsWith("org.slf4j.simpleLogger.")) {
                cmd.add("-D" + key + "=" + e.getValue());
            }
        }
        if (onModulePath) {
            cmd.add("-p");
            cmd.add(modulePath);
            cmd.add("-m");
            cmd.add(MAIN_MODULE + "/" + Main.class.getName());
        } else {
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(Main.class.getName());
        }
        return cmd;
    }

    private void pump() {
        try (BufferedReader r =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (!port.isDone() && line.startsWith("PORT ")) {
                    port.complete(Integer.parseInt(line.substring(5).trim()));
                } else {
                    System.err.println("[server " + process.pid() + "] " + line);
                }
            }
        } catch (IOException | NumberFormatException e) {
            port.completeExceptionally(e);
        }
    }

    /**
     * Waits for the child's port.
     *
     * @param timeout how long to wait
     * @return the port it listens on
     */
    int awaitPort(Duration timeout) {
        try {
            return port.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException(
                    "the bench server did not print its port within " + timeout.toSeconds() + " s");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the bench server", e);
        }
    }

    /**
     * Waits for the child to exit.
     *
     * @param timeout how long to wait before killing it
     * @return its exit code, or -1 when it had to be killed
     */
    int awaitExit(Duration timeout) {
        try {
            if (process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                return process.exitValue();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process.destroyForcibly();
        return -1;
    }

    /** Kills the child if it is still running. Idempotent. */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(3, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
    }
}
