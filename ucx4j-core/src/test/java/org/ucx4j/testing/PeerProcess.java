package org.ucx4j.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A second JVM running {@link PeerMain}: real processes, so connection set-up crosses a process boundary
 * and peer death can be a real {@code kill -9}. Lines the peer prints are collected for
 * {@link #awaitLine}; everything it prints is echoed with a prefix for diagnosis.
 */
public final class PeerProcess implements AutoCloseable {
    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> all = java.util.Collections.synchronizedList(new ArrayList<>());

    private PeerProcess(Process process) {
        this.process = process;
        Thread.ofPlatform().daemon(true).name("peer-" + process.pid() + "-out").start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    all.add(line);
                    lines.add(line);
                    System.out.println("[peer " + process.pid() + "] " + line);
                }
            } catch (IOException ignored) {
                // The process ended.
            }
        });
    }

    /** Starts {@code PeerMain} with the given arguments and extra environment. */
    public static PeerProcess start(Map<String, String> env, String... args) {
        return start(env, List.of(), args);
    }

    /** Starts a JVM running {@code mainClass}-less {@link PeerMain} with JVM options. */
    public static PeerProcess start(Map<String, String> env, List<String> jvmOptions, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-Xmx768m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(PeerMain.class.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        try {
            return new PeerProcess(pb.start());
        } catch (IOException e) {
            throw new IllegalStateException("cannot start peer JVM", e);
        }
    }

    /** Waits for a line starting with {@code prefix} and returns the rest of it. */
    public String awaitLine(String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
            if (line == null) {
                throw new AssertionError("peer did not print '" + prefix + "' within " + timeout
                        + (process.isAlive() ? "" : " (exited " + process.exitValue() + ")") + "; output: " + all);
            }
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length()).trim();
            }
        }
    }

    /** Everything printed so far. */
    public List<String> output() {
        synchronized (all) {
            return List.copyOf(all);
        }
    }

    /** The OS process. */
    public Process process() {
        return process;
    }

    /** {@code kill -9}. */
    public void kill9() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /** Waits for exit and returns the code. */
    public int waitFor(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("peer did not exit within " + timeout + "; output: " + output());
        }
        return process.exitValue();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
