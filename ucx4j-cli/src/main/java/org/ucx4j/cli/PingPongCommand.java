package org.ucx4j.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.ucx4j.ProgressMode;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ucx4j pingpong}: tag-message latency or bandwidth between two processes, in ucx_perftest's
 * units. Without {@code --server} or {@code --connect} it starts the server as a child JVM on this host
 * and connects to it over loopback.
 */
@Command(name = "pingpong", mixinStandardHelpOptions = true,
        description = {
            "Two-process tag ping-pong: one-way latency (half a round trip, usec) or bandwidth (MB/s, MB = 2^20 bytes).",
            "Without --server/--connect, starts the server as a child JVM and connects over loopback."
        })
final class PingPongCommand implements Callable<Integer> {
    @Option(names = "--mode", paramLabel = "latency|bandwidth", defaultValue = "latency",
            description = "What to measure (default: ${DEFAULT-VALUE}).")
    private PingPongMode mode;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", defaultValue = "8", converter = SizeConverter.class,
            description = "Message size in bytes; Ki/Mi/Gi suffixes allowed (default: ${DEFAULT-VALUE}).")
    private long size;

    @Option(names = {"-n", "--iters"}, paramLabel = "N",
            description = "Measured messages (latency: round trips). Default: 10000 for latency; for bandwidth about 4 GiB worth (10..100000).")
    private Long iterations;

    @Option(names = {"-w", "--warmup"}, paramLabel = "N",
            description = "Warm-up messages, not measured. Default as ucx_perftest: iterations/10, at most 10000.")
    private Long warmup;

    @Option(names = "--window", paramLabel = "N", defaultValue = "16",
            description = "Bandwidth mode: sends in flight at once (default: ${DEFAULT-VALUE}).")
    private int window;

    @Option(names = "--progress", paramLabel = "MODE",
            description = "Progress mode: thread-blocking, thread-polling or caller (default: the ucx4j configuration's progress-mode).")
    private String progressMode;

    @Option(names = "--server", description = "Run the server: listen, print 'PORT <n>' on stdout, serve one client, exit.")
    private boolean server;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "0",
            description = "Server: the port to listen on (default: any free port).")
    private int port;

    @Option(names = "--connect", paramLabel = "HOST:PORT", description = "Run the client against a server started with --server.")
    private String connect;

    @Option(names = "--json", description = "Print the result as JSON.")
    private boolean json;

    @Option(names = "--no-progress-bar", negatable = false, description = "Never draw the progress bar on stderr.")
    private boolean noProgressBar;

    @Option(names = "--exit-with-parent", hidden = true, description = "Server: exit when the parent process exits.")
    private boolean exitWithParent;

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (server && connect != null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--server and --connect exclude each other");
        }
        UcxConfig config = UcxConfig.load();
        ProgressMode progress = progressMode == null ? config.progressMode() : parseProgress(progressMode);
        if (!Ucx.isAvailable()) {
            System.err.println(Ucx.unavailabilityCause().getMessage());
            return Main.EXIT_UCX_UNAVAILABLE;
        }
        if (server) {
            if (exitWithParent) {
                ProcessHandle.current().parent().ifPresent(p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(3)));
            }
            new PingPongServer(progress, config, System.out).serve(port);
            return 0;
        }
        PingPongSettings run = settings();
        PingPongClient client = new PingPongClient(progress, config, !noProgressBar && !json);
        PingPongResult result;
        if (connect != null) {
            int colon = connect.lastIndexOf(':');
            if (colon <= 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--connect wants HOST:PORT, got '" + connect + "'");
            }
            result = client.run(connect.substring(0, colon), Integer.parseInt(connect.substring(colon + 1)), run);
        } else {
            List<String> serverArgs = new ArrayList<>(List.of("--server", "--port", "0", "--exit-with-parent",
                    "--progress", progress.configName()));
            try (PeerLauncher peer = PeerLauncher.start(serverArgs)) {
                int serverPort = peer.awaitPort(Duration.ofSeconds(60));
                result = client.run("127.0.0.1", serverPort, run);
                int code = peer.awaitExit(Duration.ofSeconds(15));
                if (code != 0) {
                    System.err.println("warning: the pingpong server exited with code " + code);
                }
            }
        }
        if (json) {
            System.out.println(Json.write(result.toMap()));
        } else {
            result.printTable(System.out);
        }
        return 0;
    }

    private PingPongSettings settings() {
        long n = iterations != null ? iterations : PingPongSettings.defaultIterations(mode, size);
        long w = warmup != null ? warmup : PingPongSettings.defaultWarmup(n);
        try {
            return new PingPongSettings(mode, size, n, w, window);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private ProgressMode parseProgress(String text) {
        try {
            return ProgressMode.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** Parses sizes: a whole number of bytes, optionally with a binary suffix Ki, Mi or Gi (B optional). */
    static final class SizeConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            String v = value.trim();
            if (v.endsWith("B") || v.endsWith("b")) {
                v = v.substring(0, v.length() - 1);
            }
            long factor = 1;
            if (v.length() > 2 && (v.endsWith("i") || v.endsWith("I"))) {
                char unit = Character.toUpperCase(v.charAt(v.length() - 2));
                factor = switch (unit) {
                    case 'K' -> 1L << 10;
                    case 'M' -> 1L << 20;
                    case 'G' -> 1L << 30;
                    default -> throw new CommandLine.TypeConversionException("unknown size unit in '" + value + "'");
                };
                v = v.substring(0, v.length() - 2);
            }
            try {
                return Math.multiplyExact(Long.parseLong(v.trim()), factor);
            } catch (NumberFormatException | ArithmeticException e) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a size in bytes (e.g. 8, 65536, 64Mi)");
            }
        }
    }
}
