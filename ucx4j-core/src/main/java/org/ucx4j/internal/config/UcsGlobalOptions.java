package org.ucx4j.internal.config;

import java.util.List;
import java.util.Set;

/**
 * The UCX options that libucs reads once, when it is loaded, rather than per context: they cannot
 * be passed to {@code ucp_config_modify} and must be in the environment (set with libc
 * {@code setenv}) before the first {@code dlopen} of UCX.
 *
 * <p>Source: {@code ucs_global_opts_t} in {@code ucs/config/global_opts.h} and its table in
 * {@code ucs/config/global_opts.c}, the x86 arch options
 * ({@code BUILTIN_MEMCPY_*}), and UCM's {@code MEM_*} options, which libucm reads at load as well.
 * Checked against {@code ucx_info -c -a} of UCX 1.13.1. Names are without the {@code UCX_} prefix.
 *
 * <p>Threading: immutable constants.
 */
public final class UcsGlobalOptions {
    /** Exact global option names. */
    public static final Set<String> NAMES = Set.of(
            "LOG_LEVEL",
            "LOG_LEVEL_TRIGGER",
            "LOG_FILE",
            "LOG_FILE_SIZE",
            "LOG_FILE_ROTATE",
            "LOG_FILE_FILTER",
            "LOG_BUFFER",
            "LOG_DATA_SIZE",
            "LOG_PRINT_ENABLE",
            "MPOOL_FIFO",
            "HANDLE_ERRORS",
            "ERROR_SIGNALS",
            "ERROR_MAIL_TO",
            "ERROR_MAIL_FOOTER",
            "GDB_COMMAND",
            "DEBUG_SIGNO",
            "WARN_UNUSED_ENV_VARS",
            "ASYNC_MAX_EVENTS",
            "ASYNC_SIGNO",
            "MEMTYPE_CACHE",
            "STATS_DEST",
            "STATS_TRIGGER",
            "STATS_FILTER",
            "STATS_FORMAT",
            "TUNING_PATH",
            "PERF_STALL_LOOPS",
            "MEMTRACK_DEST",
            "MEMTRACK_LIMIT",
            "PROFILE_MODE",
            "PROFILE_FILE",
            "PROFILE_LOG_SIZE",
            "TOPO_PRIO",
            "VFS_ENABLE",
            "VFS_THREAD_AFFINITY",
            "RCACHE_CHECK_PFN",
            "RCACHE_STAT_MIN",
            "RCACHE_STAT_MAX",
            "MODULE_DIR",
            "MODULE_LOG_LEVEL",
            "MODULES",
            "BUILTIN_MEMCPY_MIN",
            "BUILTIN_MEMCPY_MAX");

    /**
     * Prefixes of whole families that are global: libucs's logging, statistics, profiling, memory
     * tracking and VFS, and libucm's {@code MEM_*}. ({@code RCACHE_*} and {@code ASYNC_*} are not
     * prefixes here: {@code RCACHE_ENABLE} is a context option.)
     */
    public static final List<String> PREFIXES = List.of("LOG_", "STATS_", "PROFILE_", "MEMTRACK_", "VFS_", "MEM_");

    private UcsGlobalOptions() {}

    /**
     * Whether an option is read only when UCX loads.
     *
     * @param name the option name without {@code UCX_}, upper case, for example {@code LOG_LEVEL}
     * @return true for global options
     */
    public static boolean isGlobal(String name) {
        return NAMES.contains(name) || PREFIXES.stream().anyMatch(name::startsWith);
    }
}
