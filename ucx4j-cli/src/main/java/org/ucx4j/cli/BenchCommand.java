package org.ucx4j.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.ucx4j.ByteSize;
import org.ucx4j.MemoryKind;
import org.ucx4j.ProgressMode;
import org.ucx4j.Ucx;
import org.ucx4j.UcxConfig;
import org.ucx4j.UcxKeys;
import org.ucx4j.cuda.Cuda;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ucx4j bench}: latency, bandwidth or message rate of one operation (tag, stream, active message,
 * put, get) between two processes, in ucx_perftest's units. Without {@code --server} or {@code --connect}
 * it starts the server as a child JVM on this host and connects to it over loopback. {@code pingpong},
 * the command's first name, is an alias. With {@code --comm ucx|tcp|inproc} it measures whole messages
 * over a ucx4j-comm transport instead ({@link CommBench}).
 */
@Command(
        name = "bench",
        aliases = "pingpong",
        mixinStandardHelpOptions = true,
        description = {
            "Two-process benchmark of one operation, in ucx_perftest's units: one-way latency (half a round trip, usec),",
            "bandwidth (MB/s, MB = 2^20 bytes), message rate (msg/s).",
            "With --comm ucx|tcp|inproc: of whole messages over a ucx4j-comm transport instead.",
            "Without --server/--connect, starts the server as a child JVM and connects over loopback.",
            "'pingpong' is an alias."
        })
final class BenchCommand implements Callable<Integer> {
    @Option(
            names = "--comm",
            paramLabel = "ucx|tcp|inproc",
            description = "Benchmark a ucx4j-comm transport instead of one UCX operation (excludes --op): latency is a "
                    + "ping-pong of one message of --frames frames of --size bytes, echoed by the server; bandwidth streams "
                    + "such messages with a window of writes in flight. inproc runs both ends in this JVM.")
    private CommKind comm;

    @Option(
            names = "--frames",
            paramLabel = "F",
            description = "With --comm: frames per message, each of --size bytes (default: 1).")
    private Integer frames;

    @Option(
            names = "--op",
            paramLabel = "tag|stream|am|put|get",
            description =
                    "The operation (default: tag). Put/get: the server allocates a region of --size bytes and sends "
                            + "its remote key; put latency is a put and a flush, get latency one get. With --server: serve only this "
                            + "operation (default: any).")
    private BenchOp op;

    @Option(
            names = "--mode",
            paramLabel = "latency|bandwidth|rate",
            defaultValue = "latency",
            description = "latency: ping-pong; bandwidth: a window of --size operations in flight, then completion; "
                    + "rate: the same, reported as messages per second (default: ${DEFAULT-VALUE}).")
    private BenchMode mode;

    @Option(
            names = {"-s", "--size"},
            paramLabel = "BYTES",
            defaultValue = "8",
            converter = SizeConverter.class,
            description = "Message size (with --comm: the size of each frame): bytes, or with a unit as in the "
                    + "configuration: SI units are powers of 10 (64kB, 64MB = 64,000,000), IEC units powers of 2 "
                    + "(64Ki, 64MiB = 67,108,864) (default: ${DEFAULT-VALUE}).")
    private long size;

    @Option(
            names = {"-n", "--iters"},
            paramLabel = "N",
            description =
                    "Measured operations (latency: round trips). Default: 10000 for latency; for bandwidth about 4 GiB "
                            + "worth (10..100000); 100000 for rate.")
    private Long iterations;

    @Option(
            names = {"-w", "--warmup"},
            paramLabel = "N",
            description = "Warm-up operations, not measured. Default as ucx_perftest: iterations/10, at most 10000.")
    private Long warmup;

    @Option(names = "--warmup-time", paramLabel = "SECONDS", description = BenchSettings.WARMUP_TIME_HELP)
    private double warmupTime = BenchSettings.DEFAULT_WARMUP_SECONDS;

    @Option(
            names = "--window",
            paramLabel = "N",
            description = "Bandwidth and rate: operations (--comm: message writes) in flight at once (default: 16 for "
                    + "bandwidth, 128 for rate).")
    private Integer window;

    @Option(
            names = "--progress",
            paramLabel = "MODE",
            description =
                    "Progress mode: thread-blocking, thread-polling or caller (default: the ucx4j configuration's progress-mode).")
    private String progressMode;

    @Option(
            names = "--server",
            description = "Run the server: listen, print 'PORT <n>' on stdout, serve one client, exit.")
    private boolean server;

    @Option(
            names = {"-p", "--port"},
            paramLabel = "PORT",
            defaultValue = "0",
            description = "Server: the port to listen on (default: any free port).")
    private int port;

    @Option(
            names = "--connect",
            paramLabel = "HOST:PORT",
            converter = HostPort.Converter.class,
            description = "Run the client against a server started with --server.")
    private HostPort connect;

    @CommandLine.Mixin
    private OutputOptions output = new OutputOptions();

    @Option(
            names = "--memory",
            paramLabel = "host|cuda",
            defaultValue = "host",
            description = "Where both sides' buffers live (default: host). cuda: GPU memory from a pool on --gpu "
                    + "(the server on --peer-gpu); UCX moves it with cuda_copy/cuda_ipc.")
    private String memory;

    @Option(
            names = "--detect-memory",
            description = "--op tag with host memory: let UCX detect the buffers' memory type on every operation "
                    + "instead of declaring it (the bench allocated them and declares them host memory by default). On "
                    + "a machine with CUDA, UCX's detection can send a JVM's host buffer down its slow path on every "
                    + "operation. GPU buffers are always left to UCX's detection. Applies to this side and the server it "
                    + "starts; a server started with --server decides for itself.")
    private boolean detectMemory;

    @Option(
            names = "--gpu",
            paramLabel = "N",
            defaultValue = "0",
            description = "With --memory cuda: this process's GPU (CUDA ordinal; default 0).")
    private int gpu;

    @Option(
            names = "--peer-gpu",
            paramLabel = "N",
            description = "With --memory cuda: the GPU of the server this command starts (default: --gpu).")
    private Integer peerGpu;

    @Option(
            names = "--spill",
            description =
                    "Measure ucx4j-cuda's spill store instead: a buffer of --size bytes on --gpu spilled to pinned "
                            + "host memory and brought back, against cuMemcpy between device and pinned host memory, "
                            + "alternating --iters rounds (default 5) in this process; prints both and the ratio.")
    private boolean spill;

    @Option(
            names = "--all-to-all",
            description =
                    "Run as one worker of 'ucx4j launch': every worker sends a partition of --size bytes (default "
                            + "64MiB) to every other at once, --iters rounds (default: about 4 GiB per worker, 640 GiB over ucx:// with --memory cuda; 3 to 10,000), --window "
                            + "partitions in flight per peer (default 4), over ucx:// then tcp:// (or --comm); rank 0 prints "
                            + "the aggregate bandwidth per transport. ucx4j launch --workers 2 -- ucx4j bench --all-to-all")
    private boolean allToAll;

    @Option(names = "--exit-with-parent", hidden = true, description = "Server: exit when the parent process exits.")
    private boolean exitWithParent;

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (server && connect != null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--server and --connect exclude each other");
        }
        MemoryKind kind =
                switch (memory.trim().toLowerCase(java.util.Locale.ROOT)) {
                    case "host" -> MemoryKind.HOST;
                    case "cuda" -> MemoryKind.CUDA;
                    default ->
                        throw new CommandLine.ParameterException(
                                spec.commandLine(), "--memory is host or cuda, not '" + memory + "'");
                };
        if (kind == MemoryKind.CUDA && !Cuda.isAvailable()) {
            System.err.println("--memory cuda: " + Cuda.unavailabilityReason().orElse("CUDA is not available"));
            return Main.EXIT_UCX_UNAVAILABLE;
        }
        if (gpu < 0 || (peerGpu != null && peerGpu < 0)) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--gpu and --peer-gpu are CUDA ordinals (0 or more)");
        }
        if (spill) {
            if (comm != null || op != null || server || connect != null) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(),
                        "--spill runs in this process alone: no --comm, --op, --server or --connect");
            }
            if (iterations != null && iterations < 1) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(),
                        "--spill: --iters must be at least 1 (it reports the median of the rounds), not " + iterations);
            }
            if (!Cuda.isAvailable()) {
                System.err.println("--spill: " + Cuda.unavailabilityReason().orElse("CUDA is not available"));
                return Main.EXIT_UCX_UNAVAILABLE;
            }
            return SpillBench.run(gpu, size, iterations == null ? 5 : iterations, output.json, System.out);
        }
        BenchMemory.use(kind, gpu, peerGpu == null ? gpu : peerGpu, !detectMemory);
        if (allToAll) {
            return allToAll();
        }
        if (comm != null) {
            return new CommBench(spec.commandLine(), output.json, output.progressBar())
                    .call(comm, commSettings(), warmupNanos(), server, port, connect, exitWithParent);
        }
        if (frames != null) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "--frames goes with --comm (messages of several " + "frames); --op sends one buffer");
        }
        UcxConfig config = UcxConfig.load();
        ProgressMode progress = progressMode == null ? config.get(UcxKeys.PROGRESS_MODE) : parseProgress(progressMode);
        if (!Ucx.isAvailable()) {
            System.err.println(Ucx.unavailabilityCause().getMessage());
            return Main.EXIT_UCX_UNAVAILABLE;
        }
        if (server) {
            if (exitWithParent) {
                ProcessHandle.current().parent().ifPresent(p -> p.onExit()
                        .thenRun(() -> Runtime.getRuntime().halt(3)));
            }
            new BenchServer(progress, config, System.out, op).serve(port);
            return 0;
        }
        BenchSettings run = settings();
        BenchClient client = new BenchClient(progress, config, output.progressBar(), warmupNanos());
        BenchResult result;
        if (connect != null) {
            result = client.run(connect.host(), connect.port(), run);
        } else {
            List<String> serverArgs = new ArrayList<>(List.of(
                    "--server",
                    "--port",
                    "0",
                    "--exit-with-parent",
                    "--progress",
                    progress.configName(),
                    "--op",
                    run.op().label()));
            try (PeerLauncher peer = PeerLauncher.start(serverArgs)) {
                int serverPort = peer.awaitPort(Duration.ofSeconds(60));
                result = client.run("127.0.0.1", serverPort, run);
                int code = peer.awaitExit(Duration.ofSeconds(15));
                if (code != 0) {
                    System.err.println("warning: the bench server exited with code " + code);
                }
            }
        }
        if (output.json) {
            System.out.println(Json.write(BenchSettings.withWarmupTime(result.toMap(), warmupNanos())));
        } else {
            result.printTable(System.out);
        }
        return 0;
    }

    private int allToAll() {
        CommandLine cl = spec.commandLine();
        if (server || connect != null || op != null || frames != null || comm == CommKind.INPROC) {
            throw new CommandLine.ParameterException(
                    cl,
                    "--all-to-all runs between the workers of ucx4j launch: no --server, --connect, --op, --frames "
                            + "or --comm inproc");
        }
        boolean sizeGiven = cl.getParseResult().hasMatchedOption("--size");
        long partition = sizeGiven ? size : 64L << 20;
        int win = window != null ? window : 4;
        if (partition < 1 || win < 1 || (iterations != null && iterations < 1)) {
            throw new CommandLine.ParameterException(
                    cl, "--all-to-all needs --size, --iters and --window of 1 or more");
        }
        if (!org.ucx4j.cluster.Cluster.isLaunched()) {
            throw new CommandLine.ParameterException(
                    cl, "--all-to-all runs under ucx4j launch: ucx4j launch --workers 2 -- ucx4j bench --all-to-all");
        }
        List<CommKind> transports = comm == null ? List.of(CommKind.UCX, CommKind.TCP) : List.of(comm);
        return new AllToAllBench(BenchMemory.current(), System.out, System.err)
                .run(transports, partition, iterations, win, output.json);
    }

    /** The run the options ask for, with ucx_perftest-like defaults; a usage error when out of bounds. */
    BenchSettings settings() {
        long n = iterations != null ? iterations : BenchSettings.defaultIterations(mode, size);
        long w = warmup != null ? warmup : BenchSettings.defaultWarmup(n);
        int win = window != null ? window : BenchSettings.defaultWindow(mode);
        try {
            return new BenchSettings(op == null ? BenchOp.TAG : op, mode, size, n, w, win);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** The --comm run the options ask for; a usage error for options that do not go with --comm. */
    CommBenchSettings commSettings() {
        CommandLine cl = spec.commandLine();
        if (op != null) {
            throw new CommandLine.ParameterException(
                    cl,
                    "--comm and --op exclude each other: --op measures one UCX "
                            + "operation, --comm whole messages over a ucx4j-comm transport");
        }
        if (progressMode != null) {
            throw new CommandLine.ParameterException(
                    cl,
                    "--progress does not go with --comm: set the configuration's "
                            + "progress-mode instead (UCX4J__PROGRESS_MODE=thread-polling)");
        }
        if (mode == BenchMode.RATE) {
            throw new CommandLine.ParameterException(cl, "--comm measures --mode latency or bandwidth, not rate");
        }
        if (comm == CommKind.INPROC && (server || connect != null)) {
            throw new CommandLine.ParameterException(
                    cl, "--comm inproc runs both ends in this JVM: no --server or --connect");
        }
        int f = frames == null ? 1 : frames;
        long messageBytes;
        try {
            messageBytes = Math.max(1, Math.multiplyExact((long) f, size));
        } catch (ArithmeticException e) {
            messageBytes = Long.MAX_VALUE; // refused below
        }
        long n = iterations != null ? iterations : BenchSettings.defaultIterations(mode, messageBytes);
        long w = warmup != null ? warmup : BenchSettings.defaultWarmup(n);
        int win = window != null ? window : BenchSettings.defaultWindow(mode);
        try {
            return new CommBenchSettings(mode, f, size, n, w, win);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(cl, e.getMessage());
        }
    }

    /** {@code --warmup-time} in nanoseconds; a usage error when negative or absurd. */
    long warmupNanos() {
        if (!(warmupTime >= 0 && warmupTime <= 3600)) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--warmup-time must be 0..3600 seconds: " + warmupTime);
        }
        return (long) (warmupTime * 1e9);
    }

    private ProgressMode parseProgress(String text) {
        try {
            return ProgressMode.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** Reads {@code --size} with {@link ByteSize}, the configuration's parser: one meaning for each unit. */
    static final class SizeConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return ByteSize.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("'" + value + "': " + e.getMessage());
            }
        }
    }
}
