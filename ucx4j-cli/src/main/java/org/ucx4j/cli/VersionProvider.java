package org.ucx4j.cli;

import picocli.CommandLine;

/** {@code ucx4j --version}: the ucx4j module version and the Java runtime (UCX's version is in {@code info}). */
final class VersionProvider implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
        String version = Main.class.getModule().getDescriptor() == null
                ? "(unnamed module)"
                : Main.class.getModule().getDescriptor().rawVersion().orElse("(unknown version)");
        return new String[] {
            "ucx4j " + version, "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
        };
    }
}
