package org.ucx4j.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.Ucx;
import org.ucx4j.comm.CommOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ucx4j demo}: the same workload over {@code ucx://} and {@code tcp://} on loopback (each against
 * a {@code bench --comm X --server} child JVM), for frame sizes from 1 KiB to 256 MiB; prints a table
 * and writes an HTML page with charts.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = {
            "ucx:// against tcp:// on this machine: MB/s and round trips per second",
            "for frames of 1 KiB to 256 MiB (one per message), client and server in",
            "two JVMs over loopback; about 1-2 minutes. Prints a table and writes an",
            "HTML page with charts (self-contained: no script, nothing fetched)."
        })
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--quick", description = "Three sizes and short runs: about 10 seconds.")
    private boolean quick;

    @Option(
            names = "--html",
            paramLabel = "PATH",
            defaultValue = "ucx4j-demo.html",
            description = "Where the page goes (default: ${DEFAULT-VALUE} in the current directory).")
    private Path html;

    @CommandLine.Mixin
    private OutputOptions output = new OutputOptions();

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        requireWritable(html);
        if (!Ucx.isAvailable()) {
            System.err.println("ucx4j demo compares ucx:// with tcp:// and needs UCX: "
                    + Ucx.unavailabilityCause().getMessage());
            return Main.EXIT_UCX_UNAVAILABLE;
        }
        CommOptions options = CommOptions.defaults();
        CommBench.requireSelfProgress(spec.commandLine(), options);
        DemoPlan plan = quick ? DemoPlan.quick() : DemoPlan.full();
        Map<String, Object> machine = DemoReport.machineFacts(options.config());
        int runs = plan.runs(DemoReport.KINDS.size());
        System.err.println("ucx4j demo: ucx:// against tcp:// over loopback, "
                + plan.sizes().size() + " frame sizes from "
                + DemoReport.sizeLabel(plan.sizes().getFirst()) + " to "
                + DemoReport.sizeLabel(plan.sizes().getLast())
                + ", " + runs + " runs (" + (quick ? "about 10 s" : "about 1-2 minutes")
                + "); starting the servers ...");
        List<CommBenchResult> results = new ArrayList<>();
        Map<Long, List<String>> carriers = new java.util.HashMap<>();
        Map<CommKind, CommPeer> peers = startPeers(options);
        try (ProgressBar bar = ProgressBar.start(runs, "ucx4j demo", !output.noProgressBar)) {
            // The JIT first (BenchSettings.DEFAULT_WARMUP_SECONDS): small round trips and 1 MiB streaming,
            // once per transport; the sizes' own warm-up counts do the rest.
            long warm = quick ? 300_000_000L : 1_000_000_000L;
            bar.label("warming up");
            for (CommPeer peer : peers.values()) {
                peer.warmUp(plan.latency(plan.sizes().getFirst()), warm, false); // the demo's bar says it
                peer.warmUp(plan.bandwidth(1L << 20), warm, false);
            }
            int done = 0;
            for (long size : plan.sizes()) {
                for (CommBenchSettings run : List.of(plan.latency(size), plan.bandwidth(size))) {
                    for (CommKind kind : DemoReport.KINDS) {
                        String what = String.format(
                                "[%2d/%d] %-6s %7s %-9s",
                                done + 1,
                                runs,
                                kind.scheme() + "://",
                                DemoReport.sizeLabel(size),
                                run.mode().label());
                        bar.label(what);
                        CommBenchResult r;
                        try (ProgressBar silent = ProgressBar.start(run.total(), what, false)) {
                            r = peers.get(kind).run(run, silent); // the demo's bar counts runs
                        }
                        results.add(r);
                        bar.println(what + "  " + summary(r));
                        bar.step();
                        done++;
                    }
                }
            }
            // After the runs: the endpoint's lanes are settled (wired up) by then.
            for (long size : plan.sizes()) {
                carriers.put(size, peers.get(CommKind.UCX).carriedBy(size));
            }
        } finally {
            closeAll(peers.values());
        }
        DemoReport report = new DemoReport(machine, plan.sizes(), results, carriers);
        report.writeHtml(html);
        if (output.json) {
            System.out.println(Json.write(report.toMap()));
        } else {
            report.printTable(System.out, html);
        }
        return 0;
    }

    /**
     * Fails with a usage error, before any benchmark runs, when the page could not be written: its
     * directory cannot be created or is not writable, or the path is a directory or a read-only file.
     * Creates the directory (as writing the page would).
     */
    private void requireWritable(Path page) {
        Path target = page.toAbsolutePath();
        Path parent = target.getParent();
        String problem = null;
        try {
            if (parent != null) {
                Files.createDirectories(parent);
            }
        } catch (IOException e) {
            problem = "its directory cannot be created (" + e + ")";
        }
        if (problem == null) {
            if (Files.isDirectory(target)) {
                problem = "it is a directory";
            } else if (Files.exists(target) ? !Files.isWritable(target) : parent != null && !Files.isWritable(parent)) {
                problem = "it is not writable";
            }
        }
        if (problem != null) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--html " + page + ": cannot write the page there: " + problem);
        }
    }

    private static String summary(CommBenchResult r) {
        if (r.latency() != null) {
            return String.format(
                    java.util.Locale.ROOT,
                    "%,10.1f round trips/s  (one-way p50 %.1f us)",
                    r.roundTripsPerSecond(),
                    r.latency().oneWayMicros(50));
        }
        return String.format(java.util.Locale.ROOT, "%,10.1f MB/s", r.bandwidthMiBps());
    }

    /** Starts both servers at once (a JVM start each), and connects to them. */
    private static Map<CommKind, CommPeer> startPeers(CommOptions options) {
        Map<CommKind, CompletableFuture<CommPeer>> starting = new EnumMap<>(CommKind.class);
        for (CommKind kind : DemoReport.KINDS) {
            CompletableFuture<CommPeer> f = new CompletableFuture<>();
            Thread.ofVirtual().name("ucx4j-demo-start-" + kind.scheme()).start(() -> {
                try {
                    f.complete(CommPeer.start(kind, options));
                } catch (Throwable t) {
                    f.completeExceptionally(t);
                }
            });
            starting.put(kind, f);
        }
        Map<CommKind, CommPeer> peers = new EnumMap<>(CommKind.class);
        RuntimeException failure = null;
        for (Map.Entry<CommKind, CompletableFuture<CommPeer>> e : starting.entrySet()) {
            try {
                peers.put(e.getKey(), e.getValue().join());
            } catch (RuntimeException ex) {
                RuntimeException cause = ex.getCause() instanceof RuntimeException re ? re : ex;
                if (failure == null) {
                    failure = cause;
                } else {
                    failure.addSuppressed(cause);
                }
            }
        }
        if (failure != null) {
            closeAll(peers.values());
            throw failure;
        }
        return peers;
    }

    private static void closeAll(Iterable<CommPeer> peers) {
        for (CommPeer p : peers) {
            try {
                p.close();
            } catch (RuntimeException e) {
                System.err.println("warning: closing a demo server: " + e.getMessage());
            }
        }
    }
}
