package io.qgpu.cli;

import java.io.PrintStream;
import java.util.List;

/** One {@code qgpu <name>} subcommand. Returns the process exit code. */
interface Subcommand {

    /** The word after {@code qgpu}. */
    String name();

    /** One line for {@code qgpu help}. */
    String summary();

    /** Full usage text. */
    String usage();

    /**
     * Runs with the arguments after the subcommand name.
     *
     * @return 0 on success, 1 when the work ran but reported failures, 2 on bad usage or input
     */
    int run(List<String> args, PrintStream out, PrintStream err) throws Exception;
}
