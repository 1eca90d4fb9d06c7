package org.ucx4j.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.ucx4j.ConfigKey;
import org.ucx4j.UcxConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ucx4j launch [options] -- <java arguments>}: one JVM per GPU (or N CPU-only workers), each with its
 * GPU first in {@code CUDA_VISIBLE_DEVICES}, its CPUs, its network device, the ucx4j configuration, its rank
 * and the launcher's rendezvous (see {@link LaunchPlanner}, {@link LaunchSession} and
 * {@code org.ucx4j.cluster.Cluster}). Dask-CUDA's {@code dask cuda worker} for the JVM.
 */
@Command(
        name = "launch",
        mixinStandardHelpOptions = true,
        description = {
            "Start one JVM per GPU (or --workers N CPU-only JVMs) running <java arguments>, each with its GPU first in",
            "CUDA_VISIBLE_DEVICES, its CPUs (NVML's, or --cpus), its network device, the ucx4j configuration, its rank",
            "and where to find its peers (org.ucx4j.cluster.Cluster). Output lines are prefixed with the worker's name;",
            "one worker failing, Ctrl-C, or the launcher dying stops them all.",
            "<java arguments>: what follows 'java' (-cp app.jar Main args), or 'java ...' with a java of your choice,",
            "or 'ucx4j ...' for this command itself (ucx4j launch --workers 2 -- ucx4j bench --all-to-all).",
            "Exit code: 0 when all succeed; 10 + the rank of the first worker that failed (63 at most); 64 bad options;",
            "78 bad configuration; 130 interrupted."
        })
final class LaunchCommand implements Callable<Integer> {
    @Mixin
    private LaunchOptions options = new LaunchOptions();

    @Parameters(arity = "1..*", paramLabel = "-- <java arguments>", description = "The worker's command line.")
    private List<String> javaArgs = new ArrayList<>();

    @Option(
            names = "--collective-timeout",
            paramLabel = "DURATION",
            description = "How long a collective (Cluster.allGather, exchange, barrier, mesh) may wait for its last "
                    + "workers, counted from the first that joined it (10m, 90s); then every worker's collective fails "
                    + "naming the ranks that never came. Default: no limit (the launcher names them every so often).")
    private String collectiveTimeout;

    /** {@code --collective-timeout}'s values: 0 (no limit) up to a year. */
    private static final ConfigKey<Duration> COLLECTIVE_TIMEOUT = ConfigKey.duration(
            "collective-timeout",
            Duration.ZERO,
            Duration.ZERO,
            Duration.ofDays(365),
            "how long a collective round may wait for its last workers");

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        LaunchPlanner.Planned planned;
        try {
            planned = LaunchPlanner.plan(options, Machine.probe());
        } catch (UcxConfigException e) {
            System.err.println("ucx4j launch: " + e.getMessage());
            return Main.EXIT_CONFIG_INVALID;
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        Duration roundTimeout;
        try {
            roundTimeout = collectiveTimeout == null ? Duration.ZERO : COLLECTIVE_TIMEOUT.parse(collectiveTimeout);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--collective-timeout " + collectiveTimeout + ": " + e.getMessage());
        }
        InetAddress bind;
        try {
            bind = options.rendezvousHost == null
                    ? InetAddress.getLoopbackAddress()
                    : InetAddress.getByName(options.rendezvousHost);
        } catch (UnknownHostException e) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--rendezvous-host " + options.rendezvousHost + ": unknown host");
        }
        return new LaunchSession(planned.workers(), workerCommand(javaArgs), bind, roundTimeout, System.out, System.err)
                .run();
    }

    /**
     * The worker's command line: {@code java} (this JVM's, unless the arguments start with a {@code java}),
     * or this command itself for {@code ucx4j ...}; the launcher inserts its agent after the first word.
     *
     * @param args the arguments after {@code --}
     * @return the command
     */
    static List<String> workerCommand(List<String> args) {
        String first = args.get(0);
        List<String> cmd = new ArrayList<>();
        if (first.equals("ucx4j")) {
            cmd.addAll(PeerLauncher.cliCommand());
            cmd.addAll(args.subList(1, args.size()));
        } else if (first.equals("java") || first.endsWith("/java")) {
            cmd.addAll(args);
        } else {
            cmd.add(ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java"));
            cmd.addAll(args);
        }
        return cmd;
    }
}
