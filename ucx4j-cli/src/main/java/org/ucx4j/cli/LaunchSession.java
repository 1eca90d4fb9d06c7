package org.ucx4j.cli;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.ucx4j.cluster.Cluster;
import org.ucx4j.cluster.RendezvousServer;
import org.ucx4j.cuda.CpuAffinity;

/**
 * Runs the workers of one launch: starts the rendezvous, starts each worker pinned to its CPUs with its
 * environment, prefixes their output lines with their names, and stops them all when one fails, when the
 * launcher is interrupted (Ctrl-C, SIGTERM) or, through the {@link org.ucx4j.cli.watchdog.LaunchWatchdog}
 * agent in each worker, when the launcher itself is killed.
 *
 * <p>Exit code: 0 when every worker exited with 0; {@code 10 + rank} of the first worker that failed
 * (63 for rank 53 and above; the message names it); 1 when a worker could not be started.
 *
 * <p>Threading: {@link #run} on one thread; output pumps on virtual threads; a shutdown hook stops the
 * workers.
 */
final class LaunchSession {
    /** The exit code of a launch whose worker of rank r failed first is {@code EXIT_WORKER_BASE + r}. */
    static final int EXIT_WORKER_BASE = 10;
    /** The highest such code: ranks from {@code EXIT_WORKER_MAX - EXIT_WORKER_BASE} on share it. */
    static final int EXIT_WORKER_MAX = 63;
    /** How long stopped workers get to exit before they are killed. */
    private static final long STOP_GRACE_MILLIS = 5_000;

    private final List<WorkerPlan> plans;
    private final List<String> command;
    private final InetAddress rendezvousBind;
    /** How long a collective round may wait for its last workers; zero: for ever. */
    private final Duration collectiveTimeout;

    private final PrintStream out;
    private final PrintStream err;
    private final Object printLock = new Object();
    private final List<Worker> workers = new ArrayList<>();
    private final BlockingQueue<Worker> exits = new LinkedBlockingQueue<>();
    private volatile boolean stopping;

    /** One started worker. */
    private record Worker(WorkerPlan plan, Process process, List<Thread> pumps) {}

    LaunchSession(
            List<WorkerPlan> plans,
            List<String> command,
            InetAddress rendezvousBind,
            Duration collectiveTimeout,
            PrintStream out,
            PrintStream err) {
        this.plans = plans;
        this.command = command;
        this.rendezvousBind = rendezvousBind;
        this.collectiveTimeout = collectiveTimeout;
        this.out = out;
        this.err = err;
    }

    /**
     * Starts every worker and waits for them.
     *
     * @return the exit code (see the class comment)
     * @throws IOException when the rendezvous or the temporary directory cannot be made
     */
    int run() throws IOException {
        Path tmp = Files.createTempDirectory("ucx4j-launch-");
        Thread hook = Thread.ofPlatform().unstarted(() -> {
            stopAll();
            deleteQuietly(tmp);
        });
        Runtime.getRuntime().addShutdownHook(hook);
        byte[] token = RendezvousServer.newToken();
        try (RendezvousServer rendezvous =
                RendezvousServer.start(rendezvousBind, plans.size(), token, collectiveTimeout)) {
            List<String> base = new ArrayList<>(command);
            if (WatchdogJar.supported()) {
                base.add(
                        1,
                        "-javaagent:" + WatchdogJar.write(tmp) + "="
                                + ProcessHandle.current().pid());
            } else {
                say("warning: this Java runtime lacks java.instrument: workers cannot watch the launcher, so a"
                        + " launcher killed with kill -9 leaves them running");
            }
            for (WorkerPlan p : plans) {
                say(describe(p));
                p.warnings().forEach(w -> say("warning: " + p.name() + ": " + w));
            }
            for (WorkerPlan p : plans) {
                if (stopping) {
                    break;
                }
                try {
                    start(p, base, rendezvous.address(), RendezvousServer.tokenText(token));
                } catch (IOException | RuntimeException e) {
                    say("cannot start " + p.name() + " (" + String.join(" ", base) + "): " + e.getMessage());
                    stopAll();
                    awaitAll();
                    return 1;
                }
            }
            return awaitOutcome();
        } finally {
            stopAll();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or ran: fine
            }
            deleteQuietly(tmp);
        }
    }

    private void start(WorkerPlan p, List<String> base, String rendezvousAddress, String token) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(base).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        pb.environment().putAll(p.environment());
        pb.environment().put(Cluster.ENV_RENDEZVOUS, rendezvousAddress);
        pb.environment().put(Cluster.ENV_TOKEN, token);
        Process process;
        try {
            process = CpuAffinity.callPinned(p.cpus(), pb::start);
        } catch (IOException e) {
            throw e;
        } catch (IllegalStateException e) {
            // The kernel refused the set (sched_setaffinity): never fatal, the worker runs unpinned.
            say("warning: " + p.name() + ": cannot pin to CPUs " + CpuAffinity.format(p.cpus()) + " (" + e.getMessage()
                    + "): starting it with all allowed CPUs");
            process = pb.start();
        } catch (Exception e) {
            throw new IOException(e.getMessage(), e);
        }
        List<Thread> pumps =
                List.of(pump(process.getInputStream(), out, p.name()), pump(process.getErrorStream(), err, p.name()));
        Worker w = new Worker(p, process, pumps);
        synchronized (workers) {
            workers.add(w);
        }
        process.onExit().thenRun(() -> exits.add(w));
    }

    private Thread pump(InputStream in, PrintStream to, String name) {
        String prefix = "[" + name + "] ";
        return Thread.ofVirtual().name("ucx4j-launch-" + name).start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    synchronized (printLock) {
                        to.println(prefix + line);
                        to.flush();
                    }
                }
            } catch (IOException e) {
                // the worker is gone
            }
        });
    }

    private int awaitOutcome() {
        Worker failed = null;
        int exited = 0;
        int started;
        synchronized (workers) {
            started = workers.size();
        }
        while (exited < started) {
            Worker w;
            try {
                w = exits.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                stopAll();
                return 1;
            }
            exited++;
            int code = w.process().exitValue();
            if (code != 0 && failed == null && !stopping) {
                failed = w;
                say(w.plan().name() + " (rank " + w.plan().rank() + ", pid "
                        + w.process().pid() + ") exited with " + code + ": stopping the other workers");
                stopAll();
            }
        }
        awaitPumps();
        if (failed == null) {
            return 0;
        }
        int code = Math.min(EXIT_WORKER_BASE + failed.plan().rank(), EXIT_WORKER_MAX);
        say("failed: " + failed.plan().name() + " (rank " + failed.plan().rank() + ") exited with "
                + failed.process().exitValue() + "; exit code " + code);
        return code;
    }

    /** Stops every worker still running: SIGTERM, then SIGKILL after the grace period. Idempotent. */
    private void stopAll() {
        List<Worker> all;
        synchronized (workers) {
            stopping = true;
            all = List.copyOf(workers);
        }
        for (Worker w : all) {
            w.process().descendants().forEach(ProcessHandle::destroy);
            w.process().destroy();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_GRACE_MILLIS);
        for (Worker w : all) {
            try {
                long left = deadline - System.nanoTime();
                if (!w.process().waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                    w.process().descendants().forEach(ProcessHandle::destroyForcibly);
                    w.process().destroyForcibly();
                    w.process().waitFor(STOP_GRACE_MILLIS, TimeUnit.MILLISECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                w.process().destroyForcibly();
            }
        }
    }

    private void awaitAll() {
        stopAll();
        awaitPumps();
    }

    private void awaitPumps() {
        List<Worker> all;
        synchronized (workers) {
            all = List.copyOf(workers);
        }
        for (Worker w : all) {
            for (Thread t : w.pumps()) {
                try {
                    t.join(2_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private static String describe(WorkerPlan p) {
        StringBuilder b = new StringBuilder(p.name()).append(": rank ").append(p.rank());
        p.gpu()
                .ifPresentOrElse(
                        g -> b.append(", ")
                                .append(g.uuid())
                                .append(" (")
                                .append(g.pciBusId())
                                .append(")"),
                        () -> b.append(", CPU only"));
        b.append(", CPUs ").append(p.cpusText()).append(", network ").append(p.networkText());
        return b.toString();
    }

    private void say(String line) {
        synchronized (printLock) {
            err.println("ucx4j launch: " + line);
            err.flush();
        }
    }

    private static void deleteQuietly(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // a temporary directory left behind is harmless
        }
    }
}
