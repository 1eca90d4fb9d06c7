package org.ucx4j.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.StructLayout;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.ucx4j.Feature;
import org.ucx4j.UcxStatus;
import org.ucx4j.testsupport.Requirements;

/**
 * Checks every hand-written struct layout ({@link Structs#all()}) and every UCX constant the Java code
 * hard-codes against the installed C headers: a C probe that includes {@code <ucp/api/ucp.h>} prints
 * {@code sizeof}, {@code _Alignof}, {@code offsetof} and the constants, gcc compiles it, and the output is
 * compared with the Java side.
 *
 * <p>Needs gcc and the UCX headers ({@code apt-get install gcc libucx-dev}); without them the test skips,
 * unless {@code UCX4J_REQUIRE_NATIVE=1}, where it fails. It does not load libucp: only compile-time facts
 * are compared.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("native")
class StructLayoutTest {
    private static final String INSTALL_HINT = "install them: apt-get install gcc libucx-dev";

    /** Probe output: "S type size", "A type align", "O type member offset size", "C name value". */
    private static final Map<String, Long> SIZES = new LinkedHashMap<>();

    private static final Map<String, Long> ALIGNS = new LinkedHashMap<>();
    private static final Map<String, long[]> MEMBERS = new LinkedHashMap<>();
    private static final Map<String, Long> CONSTANTS = new LinkedHashMap<>();

    /** A Java constant and the C expression it must equal. */
    private record Constant(String javaName, long javaValue, String cExpression) {}

    @BeforeAll
    static void runProbe(@TempDir Path dir) throws Exception {
        String gcc = findGcc();
        if (gcc == null) {
            missing("gcc is not on PATH (nor named by $CC)");
        }
        // Tell a missing header apart from a probe that does not compile: the first is an environment
        // problem (skip), the second a wrong member name or constant (fail).
        Path headerOnly = dir.resolve("header.c");
        Files.writeString(headerOnly, "#include <ucp/api/ucp.h>\nint main(void) { return 0; }\n");
        ProcessResult header = exec(dir, gcc, "-fsyntax-only", headerOnly.toString());
        if (header.exitCode != 0) {
            missing("the UCX headers (<ucp/api/ucp.h>) do not compile with " + gcc + ":\n" + header.output);
        }

        Path source = dir.resolve("probe.c");
        Files.writeString(source, probeSource(allConstants()));
        Path binary = dir.resolve("probe");
        ProcessResult compiled = exec(dir, gcc, "-std=gnu11", "-Wall", "-o", binary.toString(), source.toString());
        if (compiled.exitCode != 0) {
            fail("the layout probe did not compile: a Java member name or constant is not in the UCX headers.\n"
                    + "gcc said:\n" + compiled.output + "\nprobe source:\n" + numbered(Files.readString(source)));
        }
        ProcessResult ran = exec(dir, binary.toString());
        assertEquals(0, ran.exitCode, "probe failed: " + ran.output);
        for (String line : ran.output.split("\n")) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "S" -> SIZES.put(f[1], Long.parseLong(f[2]));
                case "A" -> ALIGNS.put(f[1], Long.parseLong(f[2]));
                case "O" -> MEMBERS.put(f[1] + " " + f[2], new long[] {Long.parseLong(f[3]), Long.parseLong(f[4])});
                case "C" -> CONSTANTS.put(f[1], Long.parseLong(f[2]));
                case "" -> {}
                default -> fail("unexpected probe line: " + line);
            }
        }
    }

    @Test
    void everyStructSizeMatchesTheHeader() {
        List<String> errors = new ArrayList<>();
        for (Map.Entry<String, StructLayout> e : Structs.all().entrySet()) {
            Long size = SIZES.get(e.getKey());
            if (size == null) {
                errors.add(e.getKey() + ": no size from the probe");
            } else if (size != e.getValue().byteSize()) {
                errors.add("sizeof(" + e.getKey() + ") is " + size + ", the Java layout has "
                        + e.getValue().byteSize());
            }
        }
        assertTrue(errors.isEmpty(), String.join("\n", errors));
        assertEquals(Structs.all().size(), SIZES.size(), "probe sizes: " + SIZES);
    }

    @Test
    void everyStructAlignmentMatchesTheHeader() {
        // Arena.allocate(layout) uses the Java alignment; it must be at least what C requires.
        List<String> errors = new ArrayList<>();
        for (Map.Entry<String, StructLayout> e : Structs.all().entrySet()) {
            long c = ALIGNS.get(e.getKey());
            if (c != e.getValue().byteAlignment()) {
                errors.add("_Alignof(" + e.getKey() + ") is " + c + ", the Java layout has "
                        + e.getValue().byteAlignment());
            }
        }
        assertTrue(errors.isEmpty(), String.join("\n", errors));
    }

    @Test
    void everyNamedMemberHasTheHeaderOffsetAndSize() {
        List<String> errors = new ArrayList<>();
        int checked = 0;
        for (Map.Entry<String, StructLayout> e : Structs.all().entrySet()) {
            String type = e.getKey();
            for (MemoryLayout member : e.getValue().memberLayouts()) {
                if (member instanceof PaddingLayout) {
                    assertTrue(member.name().isEmpty(), type + ": a padding member has a name: " + member);
                    continue;
                }
                String name = member.name().orElseThrow(() -> new AssertionError(type + ": unnamed member " + member));
                long[] c = MEMBERS.get(type + " " + name);
                if (c == null) {
                    errors.add(type + "." + name + ": not printed by the probe");
                    continue;
                }
                checked++;
                long javaOffset = Structs.offset(e.getValue(), name);
                if (c[0] != javaOffset) {
                    errors.add("offsetof(" + type + ", " + name + ") is " + c[0] + ", Java says " + javaOffset);
                }
                if (c[1] != member.byteSize()) {
                    errors.add("sizeof(" + type + "." + name + ") is " + c[1] + ", Java says " + member.byteSize());
                }
            }
        }
        assertTrue(errors.isEmpty(), String.join("\n", errors));
        assertTrue(checked > 50, "only " + checked + " members checked");
    }

    @Test
    void everyHardCodedConstantMatchesTheHeader() throws Exception {
        List<String> errors = new ArrayList<>();
        List<Constant> constants = allConstants();
        for (Constant c : constants) {
            Long header = CONSTANTS.get(key(c.cExpression()));
            if (header == null) {
                errors.add(c.cExpression() + ": not printed by the probe");
            } else if (header != c.javaValue()) {
                errors.add(c.javaName() + " is " + c.javaValue() + " but " + c.cExpression() + " is " + header);
            }
        }
        assertTrue(errors.isEmpty(), String.join("\n", errors));
        assertFalse(constants.isEmpty());
    }

    @Test
    void requestedApiVersionIsNoNewerThanTheHeader() throws Exception {
        long major = staticValue("org.ucx4j.UcxContext", "API_MAJOR");
        long minor = staticValue("org.ucx4j.UcxContext", "API_MINOR");
        long hMajor = CONSTANTS.get("UCP_API_MAJOR");
        long hMinor = CONSTANTS.get("UCP_API_MINOR");
        assertEquals(hMajor, major, "UcxContext.API_MAJOR");
        assertTrue(
                minor <= hMinor,
                "UcxContext asks ucp_init_version for API " + major + "." + minor + " but the header is " + hMajor + "."
                        + hMinor);
        assertEquals(UcxLibrary.MIN_MINOR, minor, "UcxContext.API_MINOR should be the minimum supported UCX");
    }

    /** Every hard-coded value in the main code, with the C expression it stands for. */
    private static List<Constant> allConstants() throws Exception {
        List<Constant> out = new ArrayList<>();
        for (Feature f : Feature.values()) {
            out.add(new Constant("Feature." + f.name(), f.bit(), "UCP_FEATURE_" + f.name()));
        }
        for (UcxStatus s : UcxStatus.values()) {
            if (s == UcxStatus.UNKNOWN) {
                continue;
            }
            String c =
                    switch (s) {
                        case OK, INPROGRESS -> "UCS_" + s.name();
                        default -> "UCS_ERR_" + s.name();
                    };
            out.add(new Constant("UcxStatus." + s.name(), s.code(), c));
        }
        // Link and endpoint failure ranges used by UcxStatus.isPeerFailure.
        out.add(new Constant("UcxStatus.isPeerFailure upper bound", -40, "UCS_ERR_FIRST_LINK_FAILURE"));
        out.add(new Constant("UcxStatus.isPeerFailure lower bound", -89, "UCS_ERR_LAST_ENDPOINT_FAILURE"));
        assertTrue(
                UcxStatus.isPeerFailure(-40)
                        && UcxStatus.isPeerFailure(-89)
                        && !UcxStatus.isPeerFailure(-39)
                        && !UcxStatus.isPeerFailure(-90),
                "isPeerFailure bounds moved");

        String worker = "org.ucx4j.WorkerConnections";
        add(out, worker, "EP_PARAM_FIELD_ERR_HANDLING_MODE", "UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE");
        add(out, worker, "EP_PARAM_FIELD_ERR_HANDLER", "UCP_EP_PARAM_FIELD_ERR_HANDLER");
        add(out, worker, "EP_PARAM_FIELD_SOCK_ADDR", "UCP_EP_PARAM_FIELD_SOCK_ADDR");
        add(out, worker, "EP_PARAM_FIELD_FLAGS", "UCP_EP_PARAM_FIELD_FLAGS");
        add(out, worker, "EP_PARAM_FIELD_CONN_REQUEST", "UCP_EP_PARAM_FIELD_CONN_REQUEST");
        add(out, worker, "EP_PARAMS_FLAGS_CLIENT_SERVER", "UCP_EP_PARAMS_FLAGS_CLIENT_SERVER");
        add(out, worker, "ERR_HANDLING_MODE_PEER", "UCP_ERR_HANDLING_MODE_PEER");
        add(out, worker, "ERR_HANDLING_MODE_NONE", "UCP_ERR_HANDLING_MODE_NONE");
        add(out, worker, "LISTENER_PARAM_FIELD_SOCK_ADDR", "UCP_LISTENER_PARAM_FIELD_SOCK_ADDR");
        add(out, worker, "LISTENER_PARAM_FIELD_CONN_HANDLER", "UCP_LISTENER_PARAM_FIELD_CONN_HANDLER");
        add(out, worker, "LISTENER_ATTR_FIELD_SOCKADDR", "UCP_LISTENER_ATTR_FIELD_SOCKADDR");

        String endpoint = "org.ucx4j.UcxEndpoint";
        add(out, endpoint, "STREAM_RECV_FLAG_WAITALL", "UCP_STREAM_RECV_FLAG_WAITALL");
        add(out, "org.ucx4j.EndpointLifecycle", "CLOSE_FLAG_FORCE", "UCP_EP_CLOSE_FLAG_FORCE");

        String runtime = "org.ucx4j.internal.worker.OperationTable";
        add(out, runtime, "OP_ATTR_FIELD_CALLBACK", "UCP_OP_ATTR_FIELD_CALLBACK");
        add(out, runtime, "OP_ATTR_FIELD_USER_DATA", "UCP_OP_ATTR_FIELD_USER_DATA");
        add(out, runtime, "OP_ATTR_FIELD_FLAGS", "UCP_OP_ATTR_FIELD_FLAGS");
        add(out, runtime, "OP_ATTR_FIELD_RECV_INFO", "UCP_OP_ATTR_FIELD_RECV_INFO");
        // NativeWorker's constructor writes these two as literals (field_mask 1L, thread_mode 1).
        out.add(new Constant("NativeWorker literal worker field_mask 1L", 1, "UCP_WORKER_PARAM_FIELD_THREAD_MODE"));
        out.add(new Constant("NativeWorker literal thread_mode 1", 1, "UCS_THREAD_MODE_SERIALIZED"));

        String context = "org.ucx4j.UcxContext";
        add(out, context, "PARAM_FIELD_FEATURES", "UCP_PARAM_FIELD_FEATURES");
        add(out, context, "PARAM_FIELD_NAME", "UCP_PARAM_FIELD_NAME");
        add(out, context, "CONFIG_PRINT_CONFIG", "UCS_CONFIG_PRINT_CONFIG");

        add(
                out,
                "org.ucx4j.UcxListener",
                "CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR",
                "UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR");

        String region = "org.ucx4j.MemoryRegion";
        add(out, region, "MEM_MAP_PARAM_FIELD_ADDRESS", "UCP_MEM_MAP_PARAM_FIELD_ADDRESS");
        add(out, region, "MEM_MAP_PARAM_FIELD_LENGTH", "UCP_MEM_MAP_PARAM_FIELD_LENGTH");
        add(out, region, "MEM_MAP_PARAM_FIELD_FLAGS", "UCP_MEM_MAP_PARAM_FIELD_FLAGS");
        add(out, region, "MEM_MAP_ALLOCATE", "UCP_MEM_MAP_ALLOCATE");
        add(out, region, "MEM_ATTR_FIELD_ADDRESS", "UCP_MEM_ATTR_FIELD_ADDRESS");
        add(out, region, "MEM_ATTR_FIELD_LENGTH", "UCP_MEM_ATTR_FIELD_LENGTH");

        // Sockets and poll, written by hand in Sockaddrs, Structs and Libc.
        String sockaddrs = "org.ucx4j.internal.Sockaddrs";
        add(out, sockaddrs, "AF_INET", "AF_INET");
        add(out, sockaddrs, "AF_INET6", "AF_INET6");
        add(out, sockaddrs, "MAX_SIZE", "sizeof(struct sockaddr_storage)");
        out.add(new Constant(
                "Structs.SOCKADDR_STORAGE_SIZE", Structs.SOCKADDR_STORAGE_SIZE, "sizeof(struct sockaddr_storage)"));
        out.add(new Constant("Sockaddrs.write IPv4 length", 16, "sizeof(struct sockaddr_in)"));
        out.add(new Constant("Sockaddrs.write IPv6 length", 28, "sizeof(struct sockaddr_in6)"));
        out.add(new Constant("Sockaddrs family offset", 0, "offsetof(struct sockaddr_in, sin_family)"));
        out.add(new Constant("Sockaddrs family offset (v6)", 0, "offsetof(struct sockaddr_in6, sin6_family)"));
        out.add(new Constant("Sockaddrs family size", 2, "sizeof(((struct sockaddr_in *)0)->sin_family)"));
        out.add(new Constant("Sockaddrs IPv4 port offset", 2, "offsetof(struct sockaddr_in, sin_port)"));
        out.add(new Constant("Sockaddrs IPv4 address offset", 4, "offsetof(struct sockaddr_in, sin_addr)"));
        out.add(new Constant("Sockaddrs IPv6 port offset", 2, "offsetof(struct sockaddr_in6, sin6_port)"));
        out.add(new Constant("Sockaddrs IPv6 flowinfo offset", 4, "offsetof(struct sockaddr_in6, sin6_flowinfo)"));
        out.add(new Constant("Sockaddrs IPv6 address offset", 8, "offsetof(struct sockaddr_in6, sin6_addr)"));
        out.add(new Constant("Sockaddrs IPv6 scope offset", 24, "offsetof(struct sockaddr_in6, sin6_scope_id)"));
        add(out, "org.ucx4j.internal.Libc", "POLLIN", "POLLIN");
        out.add(new Constant("Libc.pollIn scratch size", 8, "sizeof(struct pollfd)"));
        out.add(new Constant("Libc.pollIn events offset", 4, "offsetof(struct pollfd, events)"));
        out.add(new Constant("Libc.pollIn revents offset", 6, "offsetof(struct pollfd, revents)"));
        return out;
    }

    private static void add(List<Constant> out, String className, String field, String cExpression) throws Exception {
        out.add(new Constant(
                className.substring(className.lastIndexOf('.') + 1) + "." + field,
                staticValue(className, field),
                cExpression));
    }

    private static long staticValue(String className, String field) throws Exception {
        Field f = Class.forName(className).getDeclaredField(field);
        f.setAccessible(true);
        return ((Number) f.get(null)).longValue();
    }

    private static String probeSource(List<Constant> constants) {
        StringBuilder c = new StringBuilder();
        c.append("#include <stddef.h>\n#include <stdio.h>\n#include <poll.h>\n#include <sys/socket.h>\n")
                .append("#include <netinet/in.h>\n#include <ucp/api/ucp.h>\n\n")
                .append("#define S(T) printf(\"S %s %zu\\nA %s %zu\\n\", #T, sizeof(T), #T, _Alignof(T))\n")
                .append("#define O(T, M) printf(\"O %s %s %zu %zu\\n\", #T, #M, offsetof(T, M), sizeof(((T *)0)->M))\n")
                .append("#define C(N, E) printf(\"C %s %lld\\n\", N, (long long)(E))\n\n")
                .append("int main(void) {\n");
        for (Map.Entry<String, StructLayout> e : Structs.all().entrySet()) {
            String type = e.getKey();
            c.append("    S(").append(type).append(");\n");
            for (MemoryLayout member : e.getValue().memberLayouts()) {
                if (member.name().isPresent()) {
                    c.append("    O(")
                            .append(type)
                            .append(", ")
                            .append(member.name().get())
                            .append(");\n");
                }
            }
        }
        for (Constant k : constants) {
            c.append("    C(\"")
                    .append(key(k.cExpression()))
                    .append("\", ")
                    .append(k.cExpression())
                    .append(");\n");
        }
        c.append("    C(\"UCP_API_MAJOR\", UCP_API_MAJOR);\n    C(\"UCP_API_MINOR\", UCP_API_MINOR);\n");
        c.append("    return 0;\n}\n");
        return c.toString();
    }

    /** The probe prints one space-separated line per value, so names carry no spaces. */
    private static String key(String cExpression) {
        return cExpression.replace(" ", "");
    }

    private static String findGcc() {
        String cc = System.getenv("CC");
        if (cc != null && !cc.isBlank() && Files.isExecutable(Path.of(cc))) {
            return cc;
        }
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, "gcc");
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        return null;
    }

    private static void missing(String what) {
        Requirements.assume(
                "the C toolchain for UCX's headers", false, what + "; " + INSTALL_HINT, Requirements.REQUIRE_NATIVE);
    }

    private record ProcessResult(int exitCode, String output) {}

    private static ProcessResult exec(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", command) + " did not finish in 60 s");
        }
        return new ProcessResult(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    private static String numbered(String source) {
        StringBuilder sb = new StringBuilder();
        String[] lines = source.split("\n");
        for (int i = 0; i < lines.length; i++) {
            sb.append(String.format("%4d  %s%n", i + 1, lines[i]));
        }
        return sb.toString();
    }
}
