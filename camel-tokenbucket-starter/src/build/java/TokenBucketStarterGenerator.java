import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

import org.apache.camel.util.json.DeserializationException;
import org.apache.camel.util.json.JsonArray;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;

/**
 * Writes the starter's options class ({@code TokenBucketComponentConfiguration.java}) and its Spring Boot
 * metadata ({@code META-INF/additional-spring-configuration-metadata.json}) from the component's metadata,
 * {@code META-INF/io/tokenbucket/camel/tokenbucket.json} on the classpath, which Camel's generator writes from the
 * component's {@code @UriParam} and {@code @Metadata} annotations. So an option is described once, in its
 * annotation: its description, default, type, allowed values and unit reach the starter from there, as
 * camel-spring-boot's generator (SpringBootAutoConfigurationMojo) does for Camel's own starters; that plugin is
 * not served to this build.
 *
 * <p>Run by the starter's build (exec-maven-plugin, generate-sources) with Java's source launcher:
 * {@code java -cp <runtime classpath> TokenBucketStarterGenerator.java <java dir> <resources dir>}. A file is
 * rewritten only when its text changes, so an unchanged build compiles nothing again.
 *
 * <p>Types: numbers and booleans as their wrapper (null: not given here), durations as text (the starter reads
 * them with the component's reader, which takes ISO-8601 too), secret text ({@code redisUri}) as
 * {@code TokenBucketSecret} (its {@code toString} masks it), enums as the component's enum, objects as their class when it
 * is the JDK's or the component's own, else as {@code Object} with the class named in the metadata: such a class
 * comes from an optional dependency (Micrometer, Lettuce) and may be absent, so Camel resolves the reference text
 * when it sets the option. An option type other than these fails the build, naming it.
 */
public final class TokenBucketStarterGenerator {

    private static final String JSON = "META-INF/io/tokenbucket/camel/tokenbucket.json";
    /** The starter's type for the text of a secret option ({@code "secret": true} in the JSON). */
    private static final String SECRET = "TokenBucketSecret";
    private static final String BEAN_REFERENCE = "given as a bean reference (#bean:name)";
    private static final String DURATION_TEXT = "A duration: Camel duration text (1s, 500ms, 2m, 1h, 1m30s) or"
            + " a number of milliseconds, or ISO-8601 (PT2S).";

    private final String scheme;
    private final String prefix;
    private final String componentPackage;
    private final String packageName;
    private final String className;
    private final String componentDescription;
    /** The option that holds the endpoints' configuration bean (configurationField of the other options). */
    private final String configurationOption;
    private final List<Option> options = new ArrayList<>();

    /** One component option of the JSON, with what the starter makes of it. */
    private record Option(String name, JsonObject json, String javaType, String simpleType, String metadataType,
            String description, boolean duration) {

        String property(String prefix) {
            return prefix + dashed(name);
        }

        String capitalized() {
            return Character.toUpperCase(name.charAt(0)) + name.substring(1);
        }

        Object defaultValue() {
            return json.get("defaultValue");
        }
    }

    private TokenBucketStarterGenerator(JsonObject metadata) {
        JsonObject component = (JsonObject) metadata.get("component");
        scheme = component.getString("scheme");
        prefix = "camel.component." + dashed(scheme).toLowerCase(Locale.ROOT) + ".";
        String componentType = component.getString("javaType");
        componentPackage = componentType.substring(0, componentType.lastIndexOf('.'));
        packageName = componentPackage + ".springboot";
        className = componentType.substring(componentType.lastIndexOf('.') + 1).replace("Component",
                "ComponentConfiguration");
        componentDescription = component.getString("description");

        JsonObject properties = (JsonObject) metadata.get("componentProperties");
        List<Map.Entry<String, Object>> sorted = new ArrayList<>(properties.entrySet());
        sorted.sort(Comparator.comparingInt(e -> ((JsonObject) e.getValue()).getInteger("index")));
        String nested = null;
        for (Map.Entry<String, Object> e : sorted) {
            String field = ((JsonObject) e.getValue()).getString("configurationField");
            if (field != null) {
                nested = field;
            }
        }
        configurationOption = nested;
        for (Map.Entry<String, Object> e : sorted) {
            options.add(option(e.getKey(), (JsonObject) e.getValue()));
        }
    }

    private Option option(String name, JsonObject json) {
        String kind = json.getString("type");
        String javaType = json.getString("javaType");
        String description = json.getString("description");
        switch (kind) {
            case "duration":
                return new Option(name, json, "java.lang.String", "String", "java.lang.String",
                        sentence(description) + " " + DURATION_TEXT, true);
            case "enum":
                return new Option(name, json, javaType, simpleName(javaType), javaType, description, false);
            case "object":
                String reference = " The option is a " + javaType + " type, " + BEAN_REFERENCE;
                reference += name.equals(configurationOption)
                        ? ": the component uses a copy, with the other properties given here applied on top of it."
                        : ".";
                boolean typed = javaType.startsWith("java.") || javaType.startsWith(componentPackage + ".");
                return new Option(name, json, typed ? javaType : "java.lang.Object",
                        typed ? simpleName(javaType) : "Object", javaType, sentence(description) + reference, false);
            default:
                if (Boolean.TRUE.equals(json.get("secret"))) {
                    if (!javaType.equals("java.lang.String")) {
                        throw new IllegalArgumentException("secret option " + name + " of type " + javaType
                                + ": no rule for it in " + TokenBucketStarterGenerator.class.getName());
                    }
                    // held as a type whose toString masks it, never as a String a bean console would print
                    return new Option(name, json, packageName + "." + SECRET, SECRET, "java.lang.String",
                            description, false);
                }
                String wrapper = switch (javaType) {
                    case "long", "java.lang.Long" -> "java.lang.Long";
                    case "int", "java.lang.Integer" -> "java.lang.Integer";
                    case "boolean", "java.lang.Boolean" -> "java.lang.Boolean";
                    case "double", "java.lang.Double" -> "java.lang.Double";
                    case "java.lang.String" -> "java.lang.String";
                    default -> throw new IllegalArgumentException("option " + name + " of type " + kind + " ("
                            + javaType + "): no rule for it in " + TokenBucketStarterGenerator.class.getName());
                };
                return new Option(name, json, wrapper, simpleName(wrapper), wrapper, description, false);
        }
    }

    /**
     * @param args the directory of the generated Java sources, then that of the generated resources
     */
    public static void main(String[] args) throws IOException, DeserializationException {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: TokenBucketStarterGenerator <java dir> <resources dir>");
        }
        JsonObject metadata;
        try (InputStream in = TokenBucketStarterGenerator.class.getClassLoader().getResourceAsStream(JSON)) {
            if (in == null) {
                throw new IllegalStateException(JSON + " is not on the classpath: build the component first");
            }
            metadata = (JsonObject) Jsoner.deserialize(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        TokenBucketStarterGenerator generator = new TokenBucketStarterGenerator(metadata);
        Path java = Path.of(args[0], generator.packageName.replace('.', '/'), generator.className + ".java");
        writeIfChanged(java, generator.javaSource());
        writeIfChanged(Path.of(args[1], "META-INF", "additional-spring-configuration-metadata.json"),
                generator.springMetadata());
    }

    private String javaSource() {
        TreeSet<String> imports = new TreeSet<>();
        imports.add("java.util.Set");
        imports.add("org.springframework.boot.context.properties.ConfigurationProperties");
        for (Option o : options) {
            if (!o.javaType.startsWith("java.lang.") && !o.javaType.startsWith(packageName + ".")) {
                imports.add(o.javaType);
            }
        }
        StringBuilder s = new StringBuilder();
        s.append("/*\n * Generated from ").append(JSON).append(" (the component's @UriParam and @Metadata\n"
                + " * annotations) by camel-tokenbucket-starter/src/build/java/TokenBucketStarterGenerator.java: do not"
                + " edit,\n * change the annotation.\n */\n");
        s.append("package ").append(packageName).append(";\n\n");
        // the JDK's first, then the others, as in the project's hand-written sources
        for (boolean jdk : new boolean[] {true, false}) {
            for (String i : imports) {
                if (i.startsWith("java.") == jdk) {
                    s.append("import ").append(i).append(";\n");
                }
            }
            s.append('\n');
        }
        javadoc(s, "", html(componentDescription) + "\n\n<p>The options of the {@code " + scheme + "} component, the"
                + " defaults of every {@code " + scheme + ":} endpoint, as {@code " + prefix + "*}: one property per"
                + " component option, null when not given. How they reach the component: {@link "
                + className + "Support}.");
        s.append("@ConfigurationProperties(prefix = \"").append(prefix, 0, prefix.length() - 1)
                .append("\", ignoreUnknownFields = false)\n");
        s.append("public class ").append(className).append(" extends ").append(className).append("Support {\n\n");

        javadoc(s, "    ", html(enabledDescription()));
        s.append("    private Boolean enabled;\n");
        for (Option o : options) {
            Object defaultValue = o.defaultValue();
            javadoc(s, "    ", html(o.description + (defaultValue == null ? "" : " Default: " + defaultValue + ".")));
            s.append("    private ").append(o.simpleType).append(' ').append(o.name).append(";\n");
        }

        s.append('\n');
        javadoc(s, "    ", "The properties, all unset.");
        s.append("    public ").append(className).append("() {\n        super(Set.of(");
        List<String> durations = new ArrayList<>();
        for (Option o : options) {
            if (o.duration) {
                durations.add('"' + o.name + '"');
            }
        }
        s.append(String.join(", ", durations)).append("));\n    }\n");

        accessors(s, "Boolean", "enabled", "Enabled", "Whether these properties are applied: when null or true.",
                "Sets whether these properties are applied.", false);
        for (Option o : options) {
            Object defaultValue = o.defaultValue();
            String property = "{@code " + o.property(prefix) + "}";
            accessors(s, o.simpleType, o.name, o.capitalized(), property + ", or null when not given here"
                    + (defaultValue == null ? ": the component's default applies."
                            : ": the component's default, " + html(String.valueOf(defaultValue)) + ", applies."),
                    "Sets " + property + (o.duration ? "; text that is no duration fails here, naming the property."
                            : "."), o.duration);
        }
        s.append("}\n");
        return s.toString();
    }

    private static void accessors(StringBuilder s, String type, String name, String capitalized, String getterDoc,
            String setterDoc, boolean duration) {
        s.append('\n');
        javadoc(s, "    ", getterDoc);
        s.append("    public ").append(type).append(" get").append(capitalized).append("() {\n")
                .append("        return ").append(name).append(";\n    }\n\n");
        javadoc(s, "    ", setterDoc);
        s.append("    public void set").append(capitalized).append('(').append(type).append(' ').append(name)
                .append(") {\n        this.").append(name).append(" = ")
                .append(duration ? "duration(\"" + name + "\", " + name + ")" : name).append(";\n    }\n");
    }

    private String springMetadata() {
        String sourceType = packageName + "." + className;
        JsonArray properties = new JsonArray();
        properties.add(property(prefix + "enabled", "java.lang.Boolean", sourceType, enabledDescription(), true));
        properties.add(property(prefix + "customizer.enabled", "java.lang.Boolean", sourceType,
                "Whether the component customizer that applies these properties is enabled. This is enabled by"
                        + " default.", true));
        JsonArray hints = new JsonArray();
        for (Option o : options) {
            properties.add(property(o.property(prefix), o.metadataType, sourceType, o.description, o.defaultValue()));
            JsonArray values = (JsonArray) o.json.get("enum");
            if (values != null) {
                JsonArray hintValues = new JsonArray();
                for (Object value : values) {
                    JsonObject v = new JsonObject();
                    v.put("value", value);
                    hintValues.add(v);
                }
                JsonObject hint = new JsonObject();
                hint.put("name", o.property(prefix));
                hint.put("values", hintValues);
                hints.add(hint);
            }
        }
        JsonObject root = new JsonObject();
        root.put("properties", properties);
        root.put("hints", hints);
        return Jsoner.prettyPrint(Jsoner.serialize(root), 2) + "\n";
    }

    private static JsonObject property(String name, String type, String sourceType, String description,
            Object defaultValue) {
        JsonObject p = new JsonObject();
        p.put("name", name);
        p.put("type", type);
        p.put("sourceType", sourceType);
        p.put("description", description);
        if (defaultValue != null) {
            p.put("defaultValue", defaultValue);
        }
        return p;
    }

    private String enabledDescription() {
        return "Whether to enable auto configuration of the " + scheme + " component. This is enabled by default."
                + " When false, these properties are not applied: the component keeps its own defaults.";
    }

    /** Plain text (a description of the JSON) as Javadoc text: HTML's special characters and the tag sign escaped. */
    private static String html(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("@", "&#64;")
                .replace("*/", "*&#47;");
    }

    /** A Javadoc comment of Javadoc text, its paragraphs separated by an empty line, wrapped at 115 columns. */
    private static void javadoc(StringBuilder s, String indent, String text) {
        s.append(indent).append("/**\n");
        boolean first = true;
        for (String paragraph : text.split("\n\n")) {
            if (!first) {
                s.append(indent).append(" *\n");
            }
            first = false;
            StringBuilder line = new StringBuilder();
            for (String word : paragraph.split(" ")) {
                if (line.length() > 0 && indent.length() + 3 + line.length() + 1 + word.length() > 115) {
                    s.append(indent).append(" * ").append(line).append('\n');
                    line.setLength(0);
                }
                line.append(line.length() > 0 ? " " : "").append(word);
            }
            s.append(indent).append(" * ").append(line).append('\n');
        }
        s.append(indent).append(" */\n");
    }

    private static String sentence(String text) {
        return text.endsWith(".") ? text : text + ".";
    }

    private static String simpleName(String type) {
        return type.substring(type.lastIndexOf('.') + 1);
    }

    /** The property name of an option, as the starter's runtime names it (Camel's StringHelper). */
    private static String dashed(String camelCase) {
        return org.apache.camel.util.StringHelper.camelCaseToDash(camelCase);
    }

    private static void writeIfChanged(Path file, String text) throws IOException {
        if (Files.exists(file) && Files.readString(file).equals(text)) {
            return;
        }
        Files.createDirectories(file.getParent());
        Files.writeString(file, text);
    }
}
