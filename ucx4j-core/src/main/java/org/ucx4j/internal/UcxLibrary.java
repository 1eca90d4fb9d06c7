package org.ucx4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Finds, prepares and loads {@code libucp}, once per JVM.
 *
 * <p>Order: an explicit path ({@code -Ducx4j.ucx.library} or {@code UCX4J_UCX_LIBRARY}, a file or a
 * directory holding {@code libucp.so}); the system loader ({@code libucp.so.0}, {@code libucp.so}); the
 * usual prefixes (the active conda environment, a pip {@code libucx} wheel in any site-packages found
 * under the usual Python prefixes, {@code /opt/ucx}, {@code /usr/local/ucx}). The first candidate that
 * opens and reports UCX {@value #MIN_MAJOR}.{@value #MIN_MINOR} or newer wins; every attempt is kept for
 * {@code ucx4j info} and for the error message.
 *
 * <p>Why the environment first: libucs reads its global options (error signals among them) when it
 * loads. The JVM relies on SIGSEGV for null checks and stack banging, so {@code UCX_ERROR_SIGNALS} is set
 * to empty through libc {@code setenv} before the first {@code dlopen}, unless the user set it.
 *
 * <p>Threading: the first call to {@link #state()} loads, under the class-initialisation lock; the
 * result is immutable.
 */
public final class UcxLibrary {
    /** Oldest supported UCX: 1.13. */
    public static final int MIN_MAJOR = 1;
    /** Oldest supported UCX minor version. */
    public static final int MIN_MINOR = 13;

    /** System property naming the library or its directory. */
    public static final String LIBRARY_PROPERTY = "ucx4j.ucx.library";
    /** Environment variable naming the library or its directory. */
    public static final String LIBRARY_ENV = "UCX4J_UCX_LIBRARY";

    private static final Map<String, String> PENDING_GLOBALS = new LinkedHashMap<>();
    private static final Map<String, String> DEFAULT_GLOBALS = new LinkedHashMap<>();
    private static volatile boolean loadStarted;

    /** One place we looked, and what happened there. */
    public record Attempt(String candidate, String origin, String outcome) {}

    private final SymbolLookup lookup;
    private final String path;
    private final String origin;
    private final int major;
    private final int minor;
    private final int release;
    private final List<Attempt> attempts;
    private final Map<String, String> environment;

    private UcxLibrary(
            SymbolLookup lookup,
            String path,
            String origin,
            int[] version,
            List<Attempt> attempts,
            Map<String, String> environment) {
        this.lookup = lookup;
        this.path = path;
        this.origin = origin;
        this.major = version[0];
        this.minor = version[1];
        this.release = version[2];
        this.attempts = List.copyOf(attempts);
        this.environment = Map.copyOf(environment);
    }

    /** The outcome of loading: a library or the reason there is none. */
    public record State(UcxLibrary library, UnsatisfiedLinkError failure) {}

    private static final class Holder {
        static final State STATE = load();
    }

    /**
     * Asks for UCX global options ({@code UCX_<NAME>} environment variables read when libucs loads) to be
     * set before the library loads. Values already in the process environment win.
     *
     * @throws IllegalStateException when UCX is already loaded: the option could no longer take effect
     */
    public static synchronized void requestGlobalOption(String name, String value) {
        if (loadStarted) {
            throw new IllegalStateException("UCX global option UCX_" + name + " must be set before UCX loads, "
                    + "and UCX is already loaded in this JVM; set UCX_" + name + " in the environment instead");
        }
        PENDING_GLOBALS.put(name, value);
    }

    /**
     * Asks for a default of a UCX global option, weaker than the configuration's: applied before UCX loads
     * unless {@code UCX_<NAME>} is in the process environment or the configuration sets the option
     * ({@link #requestGlobalOption}).
     *
     * @param name the option name without {@code UCX_}
     * @param value its value
     * @throws IllegalStateException when UCX is already loaded: the default could no longer take effect
     */
    public static synchronized void requestGlobalDefault(String name, String value) {
        if (loadStarted) {
            throw new IllegalStateException("a default for UCX global option UCX_" + name + " must be set before "
                    + "UCX loads, and UCX is already loaded in this JVM");
        }
        DEFAULT_GLOBALS.put(name, value);
    }

    /** Whether loading has started (after which global options are fixed). */
    public static boolean loadStarted() {
        return loadStarted;
    }

    /** Loads on first use and returns the outcome. */
    public static State state() {
        return Holder.STATE;
    }

    /**
     * The loaded library.
     *
     * @throws UnsatisfiedLinkError explaining what was tried and how to install UCX
     */
    public static UcxLibrary require() {
        State s = state();
        if (s.library() == null) {
            throw s.failure();
        }
        return s.library();
    }

    private static synchronized State load() {
        loadStarted = true;
        List<Attempt> attempts = new ArrayList<>();
        Map<String, String> applied = new LinkedHashMap<>();
        try {
            prepareEnvironment(applied);
        } catch (Throwable t) {
            // Libc's downcalls are the first restricted calls: without native access they fail here, wrapped
            // in the ExceptionInInitializerError of Libc, before any dlopen.
            if (deniedNativeAccess(t)) {
                return new State(null, unavailable(attempts, NATIVE_ACCESS_DISABLED, t));
            }
            return new State(null, unavailable(attempts, "cannot prepare the environment for UCX: " + t, t));
        }
        for (String[] candidate : candidates(attempts)) {
            String location = candidate[0];
            String origin = candidate[1];
            SymbolLookup lookup;
            try {
                lookup = NativeLinker.open(location);
            } catch (IllegalCallerException e) {
                return new State(null, unavailable(attempts, NATIVE_ACCESS_DISABLED, e));
            } catch (Throwable e) {
                attempts.add(new Attempt(location, origin, "not loadable: " + e.getMessage()));
                continue;
            }
            int[] version;
            try {
                version = version(lookup);
            } catch (Throwable e) {
                attempts.add(new Attempt(location, origin, "not UCX (no ucp_get_version): " + e.getMessage()));
                continue;
            }
            if (version[0] < MIN_MAJOR || (version[0] == MIN_MAJOR && version[1] < MIN_MINOR)) {
                attempts.add(new Attempt(
                        location,
                        origin,
                        "UCX " + version[0] + "." + version[1] + "." + version[2] + " is older than the minimum "
                                + MIN_MAJOR + "." + MIN_MINOR));
                continue;
            }
            String resolved = location.indexOf('/') >= 0
                    ? location
                    : mappedPath("libucp.so").orElse(location);
            attempts.add(new Attempt(location, origin, "loaded " + resolved));
            return new State(new UcxLibrary(lookup, resolved, origin, version, attempts, applied), null);
        }
        return new State(null, unavailable(attempts, "no usable UCX library (libucp) was found", null));
    }

    private static final String NATIVE_ACCESS_DISABLED = "native access is disabled for ucx4j: run java with "
            + "--enable-native-access=org.ucx4j.core (module path) or --enable-native-access=ALL-UNNAMED "
            + "(class path)";

    private static boolean deniedNativeAccess(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof IllegalCallerException) {
                return true;
            }
        }
        return false;
    }

    private static void prepareEnvironment(Map<String, String> applied) {
        Map<String, String> wanted = new LinkedHashMap<>();
        // UCX's error-signal handlers would take SIGSEGV, which the JVM uses for its own purposes.
        wanted.put("ERROR_SIGNALS", "");
        wanted.putAll(DEFAULT_GLOBALS);
        wanted.putAll(PENDING_GLOBALS);
        for (Map.Entry<String, String> e : wanted.entrySet()) {
            String name = "UCX_" + e.getKey();
            String outside = Libc.getenv(name);
            if (outside == null) {
                Libc.setenv(name, e.getValue(), false);
                applied.put(name, e.getValue());
            }
        }
    }

    private static UnsatisfiedLinkError unavailable(List<Attempt> attempts, String headline, Throwable cause) {
        StringBuilder sb =
                new StringBuilder("UCX is not available: ").append(headline).append('.');
        if (!attempts.isEmpty()) {
            sb.append("\nTried, in order:");
            for (Attempt a : attempts) {
                sb.append("\n  - ")
                        .append(a.candidate())
                        .append(" (")
                        .append(a.origin())
                        .append("): ")
                        .append(a.outcome());
            }
        }
        sb.append("\nTo install UCX ")
                .append(MIN_MAJOR)
                .append('.')
                .append(MIN_MINOR)
                .append(" or newer:")
                .append("\n  Debian/Ubuntu: sudo apt-get install -y libucx0")
                .append("\n  pip (CUDA-enabled UCX): pip install libucx-cu13  (or libucx-cu12)")
                .append("\n  conda: conda install -c conda-forge ucx")
                .append("\nor point ucx4j at an existing libucp.so with -D")
                .append(LIBRARY_PROPERTY)
                .append("=/path/to/libucp.so or ")
                .append(LIBRARY_ENV)
                .append("=/path/to/libucp.so.");
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(sb.toString());
        if (cause != null) {
            error.initCause(cause);
        }
        return error;
    }

    private static List<String[]> candidates(List<Attempt> attempts) {
        List<String[]> out = new ArrayList<>();
        String explicit = System.getProperty(LIBRARY_PROPERTY);
        String explicitOrigin = "-D" + LIBRARY_PROPERTY;
        if (explicit == null || explicit.isBlank()) {
            explicit = System.getenv(LIBRARY_ENV);
            explicitOrigin = LIBRARY_ENV;
        }
        if (explicit != null && !explicit.isBlank()) {
            Path p = Path.of(explicit);
            if (Files.isDirectory(p)) {
                p = p.resolve("libucp.so");
            }
            if (Files.exists(p)) {
                out.add(new String[] {p.toAbsolutePath().toString(), explicitOrigin});
            } else {
                attempts.add(new Attempt(explicit, explicitOrigin, "no such file"));
            }
            // An explicit choice is final: falling back silently would hide a mistake.
            return out;
        }
        out.add(new String[] {"libucp.so.0", "system loader"});
        out.add(new String[] {"libucp.so", "system loader"});
        for (Path p : prefixCandidates()) {
            out.add(new String[] {p.toString(), "usual prefix"});
        }
        return out;
    }

    private static List<Path> prefixCandidates() {
        List<Path> libDirs = new ArrayList<>();
        String conda = System.getenv("CONDA_PREFIX");
        if (conda != null) {
            libDirs.add(Path.of(conda, "lib"));
        }
        List<Path> pythonLibRoots = new ArrayList<>();
        String venv = System.getenv("VIRTUAL_ENV");
        if (venv != null) {
            pythonLibRoots.add(Path.of(venv, "lib"));
        }
        if (conda != null) {
            pythonLibRoots.add(Path.of(conda, "lib"));
        }
        String home = System.getProperty("user.home");
        pythonLibRoots.add(Path.of(home, ".local", "lib"));
        pythonLibRoots.addAll(children(Path.of(home, ".pyenv", "versions"), "lib"));
        pythonLibRoots.add(Path.of("/usr/local/lib"));
        pythonLibRoots.add(Path.of("/usr/lib"));
        pythonLibRoots.add(Path.of("/opt/conda/lib"));
        List<Path> sitePackages = new ArrayList<>();
        String pythonPath = System.getenv("PYTHONPATH");
        if (pythonPath != null) {
            for (String entry : pythonPath.split(":")) {
                if (!entry.isBlank()) {
                    sitePackages.add(Path.of(entry));
                }
            }
        }
        for (Path root : pythonLibRoots) {
            for (Path py : glob(root, "python3*")) {
                sitePackages.add(py.resolve("site-packages"));
                sitePackages.add(py.resolve("dist-packages"));
            }
        }
        for (Path sp : sitePackages) {
            // The libucx wheels (libucx-cu12, libucx-cu13) install their libraries under libucx/lib.
            libDirs.add(sp.resolve("libucx").resolve("lib"));
            libDirs.add(sp.resolve("libucx").resolve("lib64"));
        }
        libDirs.add(Path.of("/opt/ucx/lib"));
        libDirs.add(Path.of("/usr/local/ucx/lib"));
        List<Path> found = new ArrayList<>();
        for (Path dir : libDirs) {
            for (String name : new String[] {"libucp.so", "libucp.so.0"}) {
                Path lib = dir.resolve(name);
                if (Files.isRegularFile(lib)) {
                    found.add(lib.toAbsolutePath().normalize());
                    break;
                }
            }
        }
        return found.stream().distinct().toList();
    }

    private static List<Path> children(Path dir, String sub) {
        List<Path> out = new ArrayList<>();
        for (Path child : glob(dir, "*")) {
            out.add(child.resolve(sub));
        }
        return out;
    }

    private static List<Path> glob(Path dir, String pattern) {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return out;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, pattern)) {
            ds.forEach(out::add);
        } catch (IOException | RuntimeException ignored) {
            // An unreadable directory is simply not a candidate.
        }
        out.sort(null);
        return out;
    }

    private static int[] version(SymbolLookup lookup) throws Throwable {
        MethodHandle getVersion = NativeLinker.downcallWords(lookup, "ucp_get_version", 3); // void (3 pointers)
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(JAVA_INT, 3);
            long unused = (long) getVersion.invokeExact(v.address(), v.address() + 4, v.address() + 8);
            return new int[] {v.getAtIndex(JAVA_INT, 0), v.getAtIndex(JAVA_INT, 1), v.getAtIndex(JAVA_INT, 2)};
        }
    }

    private static java.util.Optional<String> mappedPath(String fragment) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash >= 0 && line.contains(fragment)) {
                    return java.util.Optional.of(line.substring(slash).trim());
                }
            }
        } catch (IOException | RuntimeException ignored) {
            // Not Linux, or no procfs: report the soname instead.
        }
        return java.util.Optional.empty();
    }

    /** The symbols of libucp and its dependencies (libucs, libuct). */
    public SymbolLookup lookup() {
        return lookup;
    }

    /** The file that was loaded. */
    public String path() {
        return path;
    }

    /** How it was found: an explicit setting, the system loader, or a usual prefix. */
    public String origin() {
        return origin;
    }

    /** Major version. */
    public int major() {
        return major;
    }

    /** Minor version. */
    public int minor() {
        return minor;
    }

    /** Release number. */
    public int release() {
        return release;
    }

    /** {@code major.minor.release}. */
    public String version() {
        return major + "." + minor + "." + release;
    }

    /** Whether the library is at least {@code major.minor}. */
    public boolean atLeast(int wantMajor, int wantMinor) {
        return major > wantMajor || (major == wantMajor && minor >= wantMinor);
    }

    /** Every place looked at, in order. */
    public List<Attempt> attempts() {
        return attempts;
    }

    /** The {@code UCX_*} variables ucx4j set before loading (those the user had set are left alone). */
    public Map<String, String> environment() {
        return environment;
    }

    @Override
    public String toString() {
        return "UCX " + version() + " at " + Objects.toString(path);
    }
}
