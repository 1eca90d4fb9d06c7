package org.ucx4j.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.module.ModuleFinder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.ucx4j.cli.watchdog.LaunchWatchdog;

/** Writes the jar of the {@link LaunchWatchdog} agent that every launched worker loads. */
final class WatchdogJar {
    private WatchdogJar() {}

    /**
     * Whether a JVM of this runtime can load an agent: {@code -javaagent} needs the {@code java.instrument}
     * module, which a trimmed ({@code jlink}) runtime may lack.
     *
     * @return true when this runtime has {@code java.instrument}
     */
    static boolean supported() {
        return ModuleFinder.ofSystem().find("java.instrument").isPresent();
    }

    /**
     * Writes the agent's jar (the class and a manifest naming it) into {@code dir}.
     *
     * @param dir a directory only this user can write to
     * @return the jar's path
     * @throws IOException when it cannot be written
     */
    static Path write(Path dir) throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(new Attributes.Name("Premain-Class"), LaunchWatchdog.class.getName());
        Path jar = dir.resolve("ucx4j-launch-watchdog.jar");
        String entry = LaunchWatchdog.class.getName().replace('.', '/') + ".class";
        try (InputStream in = LaunchWatchdog.class.getResourceAsStream("LaunchWatchdog.class");
                OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file, manifest)) {
            if (in == null) {
                throw new IOException("cannot read " + entry + " from ucx4j-cli");
            }
            out.putNextEntry(new JarEntry(entry));
            in.transferTo(out);
            out.closeEntry();
        }
        return jar;
    }
}
