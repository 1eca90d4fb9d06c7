package org.ucx4j.cli;

import org.ucx4j.Ucx;
import org.ucx4j.UcxConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code ucx4j} command line: dispatches to the subcommands.
 *
 * <p>Exit codes: 0 success, 1 failure, 2 UCX unavailable, 78 invalid ucx4j configuration (a bad value,
 * an unknown key, a malformed YAML file: the message names the key and the source; 78 is sysexits.h's
 * EX_CONFIG, as 64 is its EX_USAGE), 64 usage error. {@code launch} also exits with 10 + the rank of the first worker
 * that failed (63 at most). (A bench server that outlives its parent halts with 3.)
 */
@Command(
        name = "ucx4j",
        mixinStandardHelpOptions = true,
        versionProvider = VersionProvider.class,
        description = "UCX for the JVM: diagnostics, benchmarks and the ucx:// against tcp:// demo.",
        subcommands = {
            InfoCommand.class,
            BenchCommand.class,
            DemoCommand.class,
            LaunchCommand.class,
            CudaCommand.class,
            CommandLine.HelpCommand.class
        })
public final class Main implements Runnable {
    /** Exit code when the UCX library cannot be loaded. */
    static final int EXIT_UCX_UNAVAILABLE = 2;
    /** Exit code when the ucx4j configuration is invalid ({@link UcxConfigException}): EX_CONFIG. */
    static final int EXIT_CONFIG_INVALID = 78;
    /** Exit code for a wrong command line. */
    static final int EXIT_USAGE = 64;

    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    /**
     * Runs the command line and exits with its code.
     *
     * @param args the arguments
     */
    public static void main(String[] args) {
        // Stdout is the commands' results (text, or --json); UCX logs to stdout unless told otherwise.
        Ucx.logToStderr();
        System.exit(run(args));
    }

    /**
     * Runs the command line without exiting (for tests).
     *
     * @param args the arguments
     * @return the exit code
     */
    static int run(String... args) {
        CommandLine cl = new CommandLine(new Main())
                .setCaseInsensitiveEnumValuesAllowed(true)
                .setExecutionExceptionHandler(Main::failed);
        usageExitCode(cl);
        CommandLine.IParameterExceptionHandler usual = cl.getParameterExceptionHandler();
        cl.setParameterExceptionHandler((e, a) -> oneLineUsageError(e, a, usual));
        return cl.execute(args);
    }

    /** Usage errors exit with 64 (EX_USAGE), so that 2 and 78 keep their meanings. */
    private static void usageExitCode(CommandLine cl) {
        cl.getCommandSpec().exitCodeOnInvalidInput(EXIT_USAGE);
        cl.getSubcommands().values().forEach(Main::usageExitCode);
    }

    /**
     * {@code launch} and {@code cuda config} answer a wrong command line with one line naming what was wrong
     * (their usage is long); the other commands keep picocli's message and usage.
     */
    private static int oneLineUsageError(
            CommandLine.ParameterException e, String[] args, CommandLine.IParameterExceptionHandler usual)
            throws Exception {
        Object command = e.getCommandLine().getCommand();
        if (command instanceof LaunchCommand || command instanceof CudaConfigCommand) {
            String name = e.getCommandLine().getCommandSpec().qualifiedName();
            e.getCommandLine().getErr().println(name + ": " + e.getMessage() + " (" + name + " --help for usage)");
            return EXIT_USAGE;
        }
        return usual.handleParseException(e, args);
    }

    /** A failure prints its message, and the stack trace only with {@code -Ducx4j.cli.trace=true}. */
    private static int failed(Exception e, CommandLine cl, CommandLine.ParseResult parsed) {
        if (Boolean.getBoolean("ucx4j.cli.trace")) {
            e.printStackTrace();
        } else {
            StringBuilder msg = new StringBuilder("ucx4j " + cl.getCommandName() + ": " + e);
            for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                msg.append("\n  caused by: ").append(c);
            }
            System.err.println(msg);
            System.err.println(
                    "(run with -Ducx4j.cli.trace=true, or UCX4J_JAVA_OPTS=-Ducx4j.cli.trace=true for bin/ucx4j, for the stack trace)");
        }
        if (causedBy(e, UcxConfigException.class)) {
            return EXIT_CONFIG_INVALID;
        }
        return causedBy(e, UnsatisfiedLinkError.class) ? EXIT_UCX_UNAVAILABLE : 1;
    }

    private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
        throw new CommandLine.ParameterException(spec.commandLine(), "a subcommand is required");
    }
}
