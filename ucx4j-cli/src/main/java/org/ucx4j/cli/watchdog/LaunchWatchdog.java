package org.ucx4j.cli.watchdog;

/**
 * Stops a worker whose launcher is gone: a Java agent ({@code -javaagent}) that {@code ucx4j launch} adds to
 * every worker's command line. Its thread checks every {@link #PERIOD_MILLIS} ms that the worker's parent
 * is still the launcher; when the launcher has died (even by {@code kill -9}, which gives it no chance to
 * stop its workers) the worker is reparented, and the agent exits it with {@link #EXIT_ORPHANED} (halting
 * after {@link #GRACE_MILLIS} ms if shutdown hooks hang). So no worker outlives its launcher by more than
 * about a second.
 *
 * <p>Why an agent: the workers run the user's program, whose main class and arguments the launcher does not
 * interpret; an agent runs beside any of them, needs no change to the program, and does not touch its
 * stdin. The launcher writes the agent's jar into its private temporary directory. This package is exported
 * only because the JVM calls {@code premain} reflectively, also when the worker runs ucx4j-cli itself on the
 * module path.
 *
 * <p>Threading: one daemon platform thread per worker JVM.
 */
public final class LaunchWatchdog {
    /** How often the agent looks at its parent. */
    public static final long PERIOD_MILLIS = 250;
    /** How long {@code System.exit} may take before the agent halts. */
    public static final long GRACE_MILLIS = 3_000;
    /** The exit code of a worker stopped because its launcher is gone. */
    public static final int EXIT_ORPHANED = 125;

    private LaunchWatchdog() {}

    /**
     * The agent's entry point.
     *
     * @param launcherPid the launcher's pid, as the agent's argument
     */
    public static void premain(String launcherPid) {
        long pid;
        try {
            pid = Long.parseLong(launcherPid.trim());
        } catch (RuntimeException e) {
            System.err.println("ucx4j launch watchdog: bad launcher pid '" + launcherPid + "'; not watching");
            return;
        }
        Thread.ofPlatform().daemon(true).name("ucx4j-launch-watchdog").start(() -> watch(pid));
    }

    private static void watch(long launcherPid) {
        while (true) {
            long parent =
                    ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
            if (parent != launcherPid) {
                System.err.println(
                        "ucx4j launch: the launcher (pid " + launcherPid + ") is gone: stopping this worker (pid "
                                + ProcessHandle.current().pid() + ")");
                Thread.ofPlatform().daemon(true).start(() -> {
                    try {
                        Thread.sleep(GRACE_MILLIS);
                    } catch (InterruptedException ignored) {
                        // halt anyway
                    }
                    Runtime.getRuntime().halt(EXIT_ORPHANED);
                });
                System.exit(EXIT_ORPHANED);
                return;
            }
            try {
                Thread.sleep(PERIOD_MILLIS); // polling the parent is the measurement here
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
