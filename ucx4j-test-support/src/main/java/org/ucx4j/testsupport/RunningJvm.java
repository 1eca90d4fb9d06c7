package org.ucx4j.testsupport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM started by {@link ChildJvm.Spec#start()}: its lines are collected for {@link #awaitLine}
 * and echoed to this JVM's stdout with a {@code [child <pid>]} prefix, for diagnosis. {@link #close()}
 * kills it ({@code kill -9}) if it still runs.
 *
 * <p>Threading: safe from any thread; one daemon thread reads the child's output.
 */
public final class RunningJvm implements AutoCloseable {
    private final Process process;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> all = Collections.synchronizedList(new ArrayList<>());

    RunningJvm(Process process) {
        this.process = process;
        Thread.ofPlatform().daemon(true).name("child-" + process.pid() + "-out").start(() -> {
            try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    all.add(line);
                    lines.add(line);
                    System.out.println("[child " + process.pid() + "] " + line);
                }
            } catch (IOException ignored) {
                // The process ended.
            }
        });
    }

    /**
     * Waits for a line starting with {@code prefix} (lines before it are passed over).
     *
     * @param prefix the start of the line
     * @param timeout how long to wait before the test fails
     * @return the rest of the line, trimmed
     * @throws InterruptedException when interrupted while waiting
     */
    public String awaitLine(String prefix, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            String line = left > 0 ? lines.poll(left, TimeUnit.NANOSECONDS) : null;
            if (line == null) {
                throw new AssertionError("child did not print '" + prefix + "' within " + timeout
                        + (process.isAlive() ? "" : " (exited " + process.exitValue() + ")") + "; output: " + output());
            }
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length()).trim();
            }
        }
    }

    /**
     * Everything printed so far.
     *
     * @return the lines, oldest first
     */
    public List<String> output() {
        synchronized (all) {
            return List.copyOf(all);
        }
    }

    /**
     * The OS process.
     *
     * @return the process
     */
    public Process process() {
        return process;
    }

    /**
     * {@code kill -9}, then waits (10 s at most) for the process to be gone.
     *
     * @throws InterruptedException when interrupted while waiting
     */
    public void kill9() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /**
     * Waits for the child to exit.
     *
     * @param timeout how long to wait before the test fails
     * @return its exit code
     * @throws InterruptedException when interrupted while waiting
     */
    public int waitFor(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("child did not exit within " + timeout + "; output: " + output());
        }
        return process.exitValue();
    }

    /**
     * Kills the child if it still runs and waits (10 s at most) for it to be gone; harmless when it has
     * exited. An interrupt while waiting is kept as the thread's interrupt status.
     */
    @Override
    public void close() {
        if (process.isAlive()) {
            try {
                kill9();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
