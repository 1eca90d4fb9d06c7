package org.ucx4j.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ucx4j cuda}: GPU commands ({@code config}). */
@Command(
        name = "cuda",
        mixinStandardHelpOptions = true,
        description = "GPU commands: config (what each worker of ucx4j launch would get).",
        subcommands = {CudaConfigCommand.class})
final class CudaCommand implements Runnable {
    @CommandLine.Spec
    private CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a subcommand is required (config)");
    }
}
