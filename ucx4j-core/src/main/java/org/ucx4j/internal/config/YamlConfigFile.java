package org.ucx4j.internal.config;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Pattern;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Compose;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.exceptions.MarkedYamlEngineException;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.Node;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.ScalarNode;
import org.snakeyaml.engine.v2.nodes.Tag;
import org.ucx4j.UcxConfigException;

/**
 * One parsed YAML config file, kept as a node tree so that every value still knows its line.
 *
 * <p>The file may hold a {@code ucx4j:} block, Dask's {@code distributed-ucxx:} block and the
 * legacy {@code distributed:} block, side by side, so that one file serves Python and Java; other
 * top-level keys are left alone. {@link #read(ConfigNamespace)} extracts one block.
 *
 * <p>Threading: immutable after {@link #parse(Path)}; read by the loading thread.
 */
public final class YamlConfigFile {
    private final Path file;
    private final MappingNode root;

    private YamlConfigFile(Path file, MappingNode root) {
        this.file = file;
        this.root = root;
    }

    /**
     * Reads and parses a file.
     *
     * @param file the file
     * @return the parsed file (empty when the file is empty)
     * @throws UcxConfigException when the file cannot be read, is not YAML, or its top level is not a mapping
     */
    public static YamlConfigFile parse(Path file) {
        LoadSettings settings = LoadSettings.builder()
                .setLabel(file.toString())
                .setUseMarks(true)
                .build();
        Optional<Node> node;
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            node = new Compose(settings).composeReader(reader);
        } catch (IOException e) {
            throw new UcxConfigException(
                    "cannot read ucx4j config file " + file + ": " + e, null, null, file.toString(), e);
        } catch (MarkedYamlEngineException e) {
            // SnakeYAML's own message and its marks quote the offending lines, which may hold auth.secret:
            // build the message from the position and SnakeYAML's description only, and chain no cause.
            String where = e.getProblemMark()
                    .map(m -> file + ":" + (m.getLine() + 1) + ":" + (m.getColumn() + 1))
                    .orElse(file.toString());
            String context = e.getContext() == null
                    ? ""
                    : withoutDocumentText(e.getContext())
                            + e.getContextMark()
                                    .map(m -> " (from line " + (m.getLine() + 1) + ", column " + (m.getColumn() + 1)
                                            + ")")
                                    .orElse("")
                            + ": ";
            throw new UcxConfigException(
                    "invalid YAML in ucx4j config file " + where + ": " + context + withoutDocumentText(e.getProblem())
                            + " (the file's text is not shown: it may hold a secret)",
                    null,
                    null,
                    where);
        } catch (YamlEngineException e) {
            throw new UcxConfigException(
                    "invalid YAML in ucx4j config file " + file + ": " + withoutDocumentText(e.getMessage())
                            + " (the file's text is not shown: it may hold a secret)",
                    null,
                    null,
                    file.toString());
        }
        if (node.isEmpty() || isNull(node.get())) {
            return new YamlConfigFile(file, null);
        }
        if (!(node.get() instanceof MappingNode mapping)) {
            String where = where(file, node.get());
            throw new UcxConfigException(
                    "invalid ucx4j config file " + where + ": the top level must be a mapping with a 'ucx4j:' block",
                    null,
                    null,
                    where);
        }
        return new YamlConfigFile(file, mapping);
    }

    /**
     * The file.
     *
     * @return the path it was read from
     */
    public Path file() {
        return file;
    }

    /**
     * Extracts one namespace's block as a layer.
     *
     * @param namespace which block ({@code ucx4j}, {@code distributed-ucxx}, {@code distributed.comm.ucx}, ...)
     * @param schema the registered keys
     * @return the layer, empty when the file has no such block
     * @throws UcxConfigException for a malformed block, or unknown keys in a strict one
     */
    public ConfigLayer read(ConfigNamespace namespace, ConfigSchema schema) {
        ConfigLayer layer = new ConfigLayer(file + " " + namespace.path() + ":", namespace.strict());
        Node block = root;
        for (String segment : namespace.segments()) {
            block = block instanceof MappingNode m ? child(m, segment) : null;
            if (block == null) {
                return layer;
            }
        }
        if (isNull(block)) {
            return layer;
        }
        if (!(block instanceof MappingNode mapping)) {
            if (namespace.strict()) {
                throw new UcxConfigException(
                        "invalid ucx4j config file " + where(file, block) + ": '" + namespace.path()
                                + "' must be a mapping of keys",
                        namespace.path(),
                        null,
                        where(file, block));
            }
            return layer;
        }
        walk(layer, namespace, schema, mapping, "");
        return layer;
    }

    private void walk(
            ConfigLayer layer, ConfigNamespace namespace, ConfigSchema schema, MappingNode mapping, String prefix) {
        for (NodeTuple tuple : mapping.getValue()) {
            if (!(tuple.getKeyNode() instanceof ScalarNode keyNode)) {
                continue;
            }
            String path = prefix + ConfigSchema.normalize(keyNode.getValue());
            Node value = tuple.getValueNode();
            String where = where(file, keyNode);
            if (value instanceof ScalarNode scalar) {
                if (!(isNull(scalar) && isMapTarget(namespace, schema, path))) {
                    namespace.accept(
                            layer, schema, path, isNull(scalar) ? null : scalar.getValue(), scalar.getValue(), where);
                }
                continue;
            }
            if (namespace.poolSizeOnly()) {
                continue;
            }
            String kind = value instanceof MappingNode ? "a mapping" : "a list";
            switch (schema.classify(path, !namespace.strict())) {
                case ConfigSchema.EnvironmentMap m
                when value instanceof MappingNode env -> walkEnvironment(layer, namespace, schema, env, path);
                case ConfigSchema.Group g
                when value instanceof MappingNode group -> walk(layer, namespace, schema, group, path + ".");
                case ConfigSchema.OtherModule m -> namespace.accept(layer, schema, path, null, kind, where);
                case ConfigSchema.Unknown u -> {
                    if (namespace.strict()) {
                        throw ConfigErrors.unknownKey(path, ConfigOrigin.of(where), schema);
                    }
                }
                default ->
                    throw ConfigErrors.invalidValue(
                            path,
                            kind,
                            ConfigOrigin.of(where),
                            path.equals(ConfigSchema.ENVIRONMENT)
                                    ? "expected a mapping such as {log-level: info}"
                                    : "expected a single value, got " + kind,
                            false);
            }
        }
    }

    /** A null where a mapping is expected ({@code environment:} or {@code memory-pool:} left empty) sets nothing. */
    private static boolean isMapTarget(ConfigNamespace namespace, ConfigSchema schema, String path) {
        if (namespace.poolSizeOnly()) {
            return false;
        }
        ConfigSchema.Target target = schema.classify(path, !namespace.strict());
        return target instanceof ConfigSchema.EnvironmentMap
                || target instanceof ConfigSchema.Group
                || target instanceof ConfigSchema.OtherModule;
    }

    private void walkEnvironment(
            ConfigLayer layer, ConfigNamespace namespace, ConfigSchema schema, MappingNode mapping, String path) {
        for (NodeTuple tuple : mapping.getValue()) {
            if (!(tuple.getKeyNode() instanceof ScalarNode keyNode)) {
                continue;
            }
            String entryPath = path + "." + ConfigSchema.normalize(keyNode.getValue());
            String where = where(file, keyNode);
            if (tuple.getValueNode() instanceof ScalarNode scalar) {
                namespace.accept(
                        layer, schema, entryPath, isNull(scalar) ? null : scalar.getValue(), scalar.getValue(), where);
            } else {
                throw ConfigErrors.invalidValue(
                        entryPath,
                        "a mapping or list",
                        ConfigOrigin.of(where),
                        "environment entries are single values, such as log-level: info",
                        false);
            }
        }
    }

    private static Node child(MappingNode mapping, String segment) {
        for (NodeTuple tuple : mapping.getValue()) {
            if (tuple.getKeyNode() instanceof ScalarNode key
                    && ConfigSchema.normalize(key.getValue()).equals(segment)) {
                return tuple.getValueNode();
            }
        }
        return null;
    }

    /**
     * SnakeYAML's description of a problem without the document text it quotes: its problems quote what
     * they found ({@code found unknown escape character q}, {@code expected ' ', but found 'x'},
     * {@code found undefined alias a}), which may be characters of a secret. Cut where the quoted text
     * starts, keeping the fixed description before it.
     */
    static String withoutDocumentText(String description) {
        if (description == null) {
            return "";
        }
        String cut = DOCUMENT_TEXT.matcher(description).replaceFirst("").strip();
        return cut.isEmpty() ? "syntax error" : cut;
    }

    /** Where SnakeYAML's descriptions start quoting the document (from snakeyaml-engine 2.10's messages). */
    private static final Pattern DOCUMENT_TEXT = Pattern.compile(
            "(?s)(?:,? but found|['\"`:\\n]|(?<=escape character|undefined alias|tag handle|character found) ).*");

    private static boolean isNull(Node node) {
        return node instanceof ScalarNode && Tag.NULL.equals(node.getTag());
    }

    private static String where(Path file, Node node) {
        return file
                + node.getStartMark()
                        .map(Mark::getLine)
                        .map(line -> ":" + (line + 1))
                        .orElse("");
    }
}
