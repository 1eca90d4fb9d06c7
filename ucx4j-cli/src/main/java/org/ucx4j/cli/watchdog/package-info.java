/**
 * The Java agent every worker of {@code ucx4j launch} loads, which stops the worker when its launcher is
 * gone ({@link org.ucx4j.cli.watchdog.LaunchWatchdog}). Not an API for programs.
 */
package org.ucx4j.cli.watchdog;
