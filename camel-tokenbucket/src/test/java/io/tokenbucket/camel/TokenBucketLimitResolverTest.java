package io.tokenbucket.camel;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import io.tokenbucket.math.Limits;
import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The limit resolver SPI: it answers limits, used as they are (no text parsed per key); the text form parses each
 * distinct answer once; a resolver built against the former, text-answering interface fails clearly.
 */
class TokenBucketLimitResolverTest {

    private static final Limits GOLD = TokenBucketLimitResolver.parse("20/1s,1000/1h");

    private static TokenBucketLimitSource source(TokenBucketConfiguration config) {
        TokenBucketLimitSource source = new TokenBucketLimitSource(config);
        source.validate();
        return source;
    }

    @Test
    void theLimitsAResolverAnswersAreUsedAsTheyAreAndNullMeansTheEndpointsOwn() {
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setCapacity(5);
        config.setKeyLimits("silver=2/1s");
        config.setLimitResolver(key -> key.startsWith("gold-") ? GOLD : null);
        TokenBucketLimitSource source = source(config);
        assertThat(source.limitsFor("gold-1")).isSameAs(GOLD);
        assertThat(source.limitsFor("silver").capacity()).isEqualTo(2); // keyLimits, after the resolver
        assertThat(source.limitsFor("other")).isSameAs(source.limits());
    }

    @Test
    void withAdaptiveTheEndpointsAdaptationIsAddedToTheAnswerAndTheAnswersOwnIgnored() {
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setAdaptive(true);
        config.setAdaptiveKeys("gold-*");
        Limits foreign = GOLD.withAdaptive(io.tokenbucket.math.Adaptive.of(1, 1, 1, 0, 0));
        config.setLimitResolver(key -> foreign);
        TokenBucketLimitSource source = source(config);
        assertThat(source.limitsFor("gold-1")).isEqualTo(GOLD.withAdaptive(source.limits().adaptive()));
        assertThat(source.limitsFor("plain").adaptive()).isNull(); // adaptiveKeys leave it out
    }

    @Test
    void theTextFormParsesEachDistinctAnswerOnce() {
        AtomicInteger asked = new AtomicInteger();
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        config.setLimitResolver(TokenBucketLimitResolver.text(key -> {
            asked.incrementAndGet();
            return "7/1s:9";
        }));
        TokenBucketLimitSource source = source(config);
        Limits first = source.limitsFor("a");
        assertThat(first.capacity()).isEqualTo(9);
        assertThat(source.limitsFor("b")).isSameAs(first);
        assertThat(asked).hasValue(2);
    }

    @Test
    void aResolverCompiledAgainstTheFormerTextInterfaceFailsNamingItsClassAndTheMigration(@TempDir Path dir)
            throws Exception {
        TokenBucketLimitResolver former = formerResolver(dir);
        String expected = "limitResolver formerapi.FormerResolver implements the former TokenBucketLimitResolver,"
                + " which answered text (String limitsFor(String)): recompile it against this version, implementing"
                + " TokenBucketLimitResolver.Text to keep answering text, or TokenBucketLimitResolver (Limits"
                + " resolve(String)) to answer limits made once";
        // found when the endpoint is created
        CamelContext camel = new DefaultCamelContext();
        try {
            camel.getRegistry().bind("former", former);
            camel.start();
            assertThatThrownBy(() -> camel.getEndpoint("tokenbucket:t?limitResolver=#former"))
                    .rootCause().isInstanceOf(IllegalArgumentException.class).hasMessage(expected);
        } finally {
            camel.stop();
        }
        // and by the call, when it is set on a running endpoint's configuration
        TokenBucketConfiguration config = new TokenBucketConfiguration();
        TokenBucketLimitSource source = source(config);
        config.setLimitResolver(former);
        assertThatThrownBy(() -> source.limitsFor("k")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(expected).hasCauseInstanceOf(AbstractMethodError.class);
    }

    /**
     * A resolver class compiled, as a user's jar built before the change was, against the former interface (a copy
     * of it, whose class file is then dropped), loaded against today's.
     */
    private static TokenBucketLimitResolver formerResolver(Path dir) throws Exception {
        Path api = dir.resolve("src/io/tokenbucket/camel/TokenBucketLimitResolver.java");
        Path impl = dir.resolve("src/formerapi/FormerResolver.java");
        Files.createDirectories(api.getParent());
        Files.createDirectories(impl.getParent());
        Files.writeString(api, "package io.tokenbucket.camel;\n"
                + "public interface TokenBucketLimitResolver { String limitsFor(String key); }\n");
        Files.writeString(impl, "package formerapi;\n"
                + "public class FormerResolver implements io.tokenbucket.camel.TokenBucketLimitResolver {\n"
                + "    public String limitsFor(String key) { return \"20/1s\"; }\n}\n");
        Path out = Files.createDirectories(dir.resolve("classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertThat(javac.run(null, null, null, "-classpath", out.toString(), "-d", out.toString(), api.toString(),
                impl.toString())).isZero();
        Files.delete(out.resolve("io/tokenbucket/camel/TokenBucketLimitResolver.class"));
        URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()},
                TokenBucketLimitResolverTest.class.getClassLoader());
        return (TokenBucketLimitResolver) loader.loadClass("formerapi.FormerResolver").getDeclaredConstructor()
                .newInstance();
    }
}
