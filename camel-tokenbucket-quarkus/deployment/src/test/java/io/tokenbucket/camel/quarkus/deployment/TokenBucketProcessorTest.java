package io.tokenbucket.camel.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarFile;

import io.quarkus.deployment.builditem.CombinedIndexBuildItem;
import io.quarkus.deployment.builditem.nativeimage.ReflectiveClassBuildItem;
import io.tokenbucket.camel.TokenBucketComponent;
import org.jboss.jandex.IndexReader;
import org.jboss.jandex.IndexView;
import org.junit.jupiter.api.Test;

/**
 * What the build steps register for a native image, against what the component jar holds: every Lua script, every
 * option enum and every exception, from the jar itself (a script or an enum added later is covered, or this fails).
 */
class TokenBucketProcessorTest {

    private final TokenBucketProcessor processor = new TokenBucketProcessor();

    @Test
    void theGlobCoversEveryLuaScriptOfTheComponentJar() throws IOException {
        // the patterns Quarkus hands to native-image, made from the processor's glob
        List<String> patterns = processor.luaScripts().getIncludePatterns();
        List<String> scripts;
        try (JarFile jar = componentJar()) {
            scripts = Collections.list(jar.entries()).stream().map(e -> e.getName())
                    .filter(name -> name.endsWith(".lua")).toList();
        }
        assertThat(scripts).contains("io/tokenbucket/store/redis/bucket.lua")
                .allSatisfy(name -> assertThat(patterns).as(name).anyMatch(name::matches));
        assertThat(patterns).noneMatch("io/tokenbucket/camel/TokenBucketComponent.class"::matches);
    }

    @Test
    void theOptionEnumsAndTheExceptionsAreReflective() throws IOException {
        IndexView index;
        try (JarFile jar = componentJar(); InputStream in = jar.getInputStream(jar.getEntry("META-INF/jandex.idx"))) {
            index = new IndexReader(in).read(); // the index Quarkus reads from the component jar
        }
        ReflectiveClassBuildItem item = processor.enumsAndExceptions(new CombinedIndexBuildItem(index, index));
        assertThat(item.getClassNames()).containsExactlyInAnyOrder(
                "io.tokenbucket.camel.TokenBucketException",
                "io.tokenbucket.camel.TokenBucketRejectedException",
                "io.tokenbucket.camel.TokenBucketStoreException",
                "io.tokenbucket.camel.TokenBucketMode",
                "io.tokenbucket.camel.TokenBucketOperation",
                "io.tokenbucket.camel.TokenBucketStoreErrorPolicy",
                "io.tokenbucket.camel.TokenBucketStoreType");
        assertThat(item.isMethods()).isTrue();
    }

    private static JarFile componentJar() throws IOException {
        URL url = TokenBucketComponent.class.getResource("TokenBucketComponent.class");
        assertThat(url.getProtocol()).as("the component from its jar, as an application gets it").isEqualTo("jar");
        return ((JarURLConnection) url.openConnection()).getJarFile();
    }
}
