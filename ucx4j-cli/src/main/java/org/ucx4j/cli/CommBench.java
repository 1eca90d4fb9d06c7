package org.ucx4j.cli;

import org.ucx4j.ProgressMode;
import org.ucx4j.Ucx;
import org.ucx4j.UcxKeys;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.FrameAllocator;
import picocli.CommandLine;

/**
 * {@code ucx4j bench --comm X}: the server side ({@code --server}), a client of a remote server
 * ({@code --connect}), or both on this host (a child JVM, or this JVM for inproc).
 *
 * @param commandLine for usage errors
 * @param json print the result as JSON
 * @param progressBar whether a progress bar may be drawn on stderr
 */
record CommBench(CommandLine commandLine, boolean json, boolean progressBar) {

    /**
     * Runs what the options ask for.
     *
     * @return the exit code
     */
    int call(
            CommKind kind,
            CommBenchSettings run,
            long warmupNanos,
            boolean server,
            int port,
            HostPort connect,
            boolean exitWithParent) {
        CommOptions options = CommOptions.defaults();
        if (BenchMemory.current().pool() != null) {
            options = CommOptions.builder()
                    .allocator(FrameAllocator.host().with(BenchMemory.current().pool()))
                    .build();
        }
        if (kind.needsUcx()) {
            if (!Ucx.isAvailable()) {
                System.err.println(Ucx.unavailabilityCause().getMessage());
                return Main.EXIT_UCX_UNAVAILABLE;
            }
            requireSelfProgress(commandLine, options);
        }
        if (server) {
            if (exitWithParent) {
                ProcessHandle.current().parent().ifPresent(p -> p.onExit()
                        .thenRun(() -> Runtime.getRuntime().halt(3)));
            }
            CommBenchServer.serveOne(kind, port, options, System.out);
            return 0;
        }
        CommBenchResult result;
        try (CommPeer peer = connect == null ? CommPeer.start(kind, options) : remote(kind, connect, options);
                ProgressBar bar = ProgressBar.start(
                        run.total(),
                        kind.scheme() + " " + run.mode().label() + " " + run.frames() + " x " + run.size() + " B",
                        progressBar)) {
            peer.warmUp(run, warmupNanos, progressBar);
            result = peer.run(run, bar);
        }
        if (json) {
            System.out.println(Json.write(BenchSettings.withWarmupTime(result.toMap(), warmupNanos)));
        } else {
            result.printTable(System.out);
        }
        return 0;
    }

    /**
     * The client joins the futures of its window of writes, so UCX must progress on its own thread.
     *
     * @param commandLine for the usage error
     * @param options the comm options in force
     * @throws CommandLine.ParameterException for progress-mode caller
     */
    static void requireSelfProgress(CommandLine commandLine, CommOptions options) {
        if (options.config().get(UcxKeys.PROGRESS_MODE) == ProgressMode.CALLER) {
            throw new CommandLine.ParameterException(
                    commandLine,
                    "--comm ucx needs progress-mode thread-blocking or "
                            + "thread-polling (the configuration says caller): the benchmark waits on write futures");
        }
    }

    private static CommPeer remote(CommKind kind, HostPort connect, CommOptions options) {
        return CommPeer.connect(kind, connect.host(), connect.port(), options);
    }
}
